#include "core/cgroup_birth.h"

#include <fcntl.h>
#include <unistd.h>

namespace codecvisor {
namespace {

std::string Dirname(const std::string& path) { return path.substr(0, path.rfind('/')); }

// "0": the writing thread itself.
bool MoveThisThread(const ipc::UniqueFd& tasks) { return pwrite(tasks.get(), "0", 1, 0) == 1; }

}  // namespace

CgroupBirth::CgroupBirth(const std::vector<std::string>& procs_files, int version) {
  if (procs_files.empty()) return;
  if (version == 2 && procs_files.size() == 1) {
    v2_dir_ = ipc::UniqueFd(open(Dirname(procs_files.front()).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    return;
  }
  if (version != 1) return;
  for (const std::string& procs : procs_files) {
    const std::string dir = Dirname(procs);
    ipc::UniqueFd enter(open((dir + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
    ipc::UniqueFd leave(open((Dirname(dir) + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
    if (enter.get() < 0 || leave.get() < 0) {
      enter_tasks_.clear();
      leave_tasks_.clear();
      return;
    }
    enter_tasks_.push_back(std::move(enter));
    leave_tasks_.push_back(std::move(leave));
  }
}

CgroupBirth::~CgroupBirth() { Leave(); }

bool CgroupBirth::Enter() {
  if (enter_tasks_.empty() || entered_) return entered_;
  for (size_t i = 0; i < enter_tasks_.size(); ++i) {
    if (!MoveThisThread(enter_tasks_[i])) {
      for (size_t j = 0; j < i; ++j) (void)MoveThisThread(leave_tasks_[j]);
      return false;
    }
  }
  entered_ = true;
  return true;
}

void CgroupBirth::Abandon() {
  Leave();
  v2_dir_.reset();
  enter_tasks_.clear();
  leave_tasks_.clear();
}

void CgroupBirth::CloseInChild() const {
  if (v2_dir_.valid()) close(v2_dir_.get());
  for (const ipc::UniqueFd& fd : enter_tasks_) close(fd.get());
  for (const ipc::UniqueFd& fd : leave_tasks_) close(fd.get());
}

void CgroupBirth::Leave() {
  if (!entered_) return;
  for (const ipc::UniqueFd& tasks : leave_tasks_) (void)MoveThisThread(tasks);
  entered_ = false;
}

}  // namespace codecvisor
