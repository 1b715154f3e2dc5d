// File: core/empty_root_test.cc
//
// The host's plan of a backend's filesystem, from fake host views: a
// merged-/usr Debian, an older split layout, manifest paths inside and
// outside what is already there, links, missing paths and devices. The
// plan applied for real is tested by tests/sandbox_escape_test.cc.

#include "core/empty_root.h"

#include <sys/mount.h>

#include <map>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

// A host: path -> how it looks. Folders and files canonical unless listed.
class FakeHost {
 public:
  FakeHost& Dir(const std::string& p, unsigned long flags = 0) { return Put(p, HostPath::kDirectory, "", p, flags); }
  FakeHost& File(const std::string& p, unsigned long flags = 0) { return Put(p, HostPath::kFile, "", p, flags); }
  // A folder whose path runs through a link (lstat follows the parents).
  FakeHost& DirVia(const std::string& p, const std::string& canonical) {
    return Put(p, HostPath::kDirectory, "", canonical, 0);
  }
  FakeHost& Link(const std::string& p, const std::string& target, const std::string& canonical) {
    return Put(p, HostPath::kSymlink, target, canonical, 0);
  }
  HostPathProbe Probe() const {
    return [this](const std::string& p) {
      auto it = paths_.find(p);
      return it == paths_.end() ? HostPath{} : it->second;
    };
  }

 private:
  FakeHost& Put(const std::string& p, HostPath::Kind kind, const std::string& target, const std::string& canonical,
                unsigned long flags) {
    HostPath h;
    h.kind = kind;
    h.link_target = target;
    h.canonical = canonical;
    h.mount_flags = flags;
    paths_[p] = h;
    return *this;
  }
  std::map<std::string, HostPath> paths_;
};

// Debian 12: /lib and /lib64 are links into /usr; /sys is nosuid,nodev,noexec.
FakeHost MergedUsr() {
  FakeHost h;
  h.Dir("/usr").Link("/lib", "usr/lib", "/usr/lib").Link("/lib64", "usr/lib64", "/usr/lib64");
  h.Dir("/usr/lib").Dir("/usr/lib64").File("/etc/ld.so.cache");
  h.Dir("/sys/devices/system/cpu", MS_NOSUID | MS_NODEV | MS_NOEXEC).File("/dev/null", MS_NOSUID);
  return h;
}

std::vector<std::string> Lines(const EmptyRootPlan& plan) {
  std::vector<std::string> lines;
  for (const MountStep& s : plan.steps) lines.push_back(s.Describe());
  return lines;
}

TEST(EmptyRootTest, AMergedUsrHostGetsItsLinksAndOneBindOfUsr) {
  const FakeHost host = MergedUsr();
  const EmptyRootPlan plan = PlanEmptyRoot({}, {}, host.Probe());
  const std::vector<std::string> want = {
      "make the folder /tmp/usr",
      "bind /usr on /tmp/usr (read-only)",
      "link /tmp/lib to usr/lib",
      "link /tmp/lib64 to usr/lib64",
      "make the folder /tmp/etc",
      "make the mount point /tmp/etc/ld.so.cache",
      "bind /etc/ld.so.cache on /tmp/etc/ld.so.cache (read-only)",
      "make the folder /tmp/sys",
      "make the folder /tmp/sys/devices",
      "make the folder /tmp/sys/devices/system",
      "make the folder /tmp/sys/devices/system/cpu",
      "bind /sys/devices/system/cpu on /tmp/sys/devices/system/cpu (read-only)",
      "make the folder /tmp/dev",
      "make the mount point /tmp/dev/null",
      "bind /dev/null on /tmp/dev/null (read-write)",
      "make the folder /tmp/proc",
      "mount a proc of its own pid namespace",
  };
  EXPECT_EQ(Lines(plan), want);
}

TEST(EmptyRootTest, ARemountKeepsTheFlagsTheKernelLocksOnTheSourceMount) {
  const FakeHost host = MergedUsr();
  const EmptyRootPlan plan = PlanEmptyRoot({}, {}, host.Probe());
  int binds = 0;
  for (const MountStep& s : plan.steps) {
    if (s.kind == MountStep::kBind && s.source == "/sys/devices/system/cpu") {
      ++binds;
      EXPECT_EQ(s.mount_flags, static_cast<unsigned long>(MS_NOSUID | MS_NODEV | MS_NOEXEC));
      EXPECT_FALSE(s.writable);
    }
  }
  EXPECT_EQ(binds, 1) << "the CPU topology is bound once";
}

TEST(EmptyRootTest, ASplitLayoutBindsEachLibraryFolder) {
  FakeHost host;
  host.Dir("/usr").Dir("/lib").Dir("/lib64").File("/etc/ld.so.cache");
  const std::vector<std::string> lines = Lines(PlanEmptyRoot({}, {}, host.Probe()));
  for (const char* want : {"bind /lib on /tmp/lib (read-only)", "bind /lib64 on /tmp/lib64 (read-only)"}) {
    EXPECT_NE(std::find(lines.begin(), lines.end(), want), lines.end()) << want;
  }
  // Nothing the host lacks is planned: no /lib32, no CPU topology, no /dev/null.
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find("lib32"), std::string::npos) << line;
    EXPECT_EQ(line.find("/dev/null"), std::string::npos) << line;
  }
}

TEST(EmptyRootTest, ManifestPathsAreBoundOnceWhereTheyAreNotVisibleAlready) {
  FakeHost host = MergedUsr();
  host.Dir("/opt/acme/models").File("/opt/acme/license.key").Dir("/usr/share/acme");
  const std::vector<std::string> lines =
      Lines(PlanEmptyRoot({"/opt/acme/models", "/usr/share/acme", "/opt/acme/license.key", "/opt/acme/models",
                           "/nonexistent", "relative/path"},
                          {}, host.Probe()));
  auto count = [&](const std::string& line) { return std::count(lines.begin(), lines.end(), line); };
  EXPECT_EQ(count("make the folder /tmp/opt"), 1);
  EXPECT_EQ(count("make the folder /tmp/opt/acme"), 1);
  EXPECT_EQ(count("bind /opt/acme/models on /tmp/opt/acme/models (read-only)"), 1);
  EXPECT_EQ(count("bind /opt/acme/license.key on /tmp/opt/acme/license.key (read-only)"), 1);
  EXPECT_EQ(count("make the mount point /tmp/opt/acme/license.key"), 1);
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find("share/acme"), std::string::npos) << "inside /usr, bound already: " << line;
    EXPECT_EQ(line.find("nonexistent"), std::string::npos) << line;
    EXPECT_EQ(line.find("relative"), std::string::npos) << line;
  }
}

TEST(EmptyRootTest, APathThroughALinkIsBoundWhereTheLinkLeads) {
  FakeHost host = MergedUsr();
  host.Dir("/usr/lib/acme");
  host.Link("/opt/models", "/data/models", "/data/models").Dir("/data/models");
  host.DirVia("/lib/acme", "/usr/lib/acme");
  const std::vector<std::string> lines = Lines(PlanEmptyRoot({"/opt/models", "/lib/acme"}, {}, host.Probe()));
  auto has = [&](const std::string& line) { return std::find(lines.begin(), lines.end(), line) != lines.end(); };
  EXPECT_TRUE(has("link /tmp/opt/models to /data/models"));
  EXPECT_TRUE(has("bind /data/models on /tmp/data/models (read-only)"));
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find("/tmp/lib/acme"), std::string::npos) << "a folder inside a link of ours: " << line;
  }
}

TEST(EmptyRootTest, DevicesAreReadWriteAndProcComesLast) {
  FakeHost host = MergedUsr();
  host.File("/dev/dri/renderD128");
  const EmptyRootPlan plan = PlanEmptyRoot({}, {"/dev/dri/renderD128", "/dev/missing"}, host.Probe());
  const std::vector<std::string> lines = Lines(plan);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "bind /dev/dri/renderD128 on /tmp/dev/dri/renderD128 (read-write)"),
            lines.end());
  ASSERT_FALSE(plan.steps.empty());
  EXPECT_EQ(plan.steps.back().kind, MountStep::kProc);
  for (const MountStep& s : plan.steps) {
    EXPECT_EQ(s.target.rfind(kEmptyRootStage, 0), 0u) << "outside the stage: " << s.target;
  }
}

}  // namespace
}  // namespace codecvisor
