#include "core/cgroup_birth.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace codecvisor {

CgroupBirth::CgroupBirth(const std::vector<std::string>& procs_files, int version) {
  if (procs_files.empty()) return;
  auto dir_of = [](const std::string& procs) { return procs.substr(0, procs.rfind('/')); };
  if (version == 2 && procs_files.size() == 1) {
    v2_dir_ = ipc::UniqueFd(open(dir_of(procs_files.front()).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    return;
  }
  if (version != 1) return;
  for (const std::string& procs : procs_files) {
    ipc::UniqueFd tasks(open((dir_of(procs) + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
    if (!tasks.valid()) {
      tasks_.clear();
      return;
    }
    tasks_.push_back(std::move(tasks));
  }
}

void CgroupBirth::Abandon() {
  v2_dir_.reset();
  tasks_.clear();
}

int CgroupBirth::EnterInChild() const {
  int err = 0;
  for (const ipc::UniqueFd& tasks : tasks_) {
    if (err == 0 && write(tasks.get(), "0", 1) != 1) err = errno != 0 ? errno : EIO;
    close(tasks.get());
  }
  if (v2_dir_.valid()) close(v2_dir_.get());
  return err;
}

}  // namespace codecvisor
