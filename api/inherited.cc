#include "api/inherited.h"

#include <atomic>

namespace codecvisor::api {
namespace {

// A push-only list, without a lock: a forked child keeps what it inherited
// from its parent's objects, even where a thread of the parent was pushing
// when it forked (a mutex that thread held would stay held in the child).
struct Kept {
  const void* object;
  Kept* next;
};

// Never destroyed: the list must outlive every static destructor that
// could still drop an inherited object.
std::atomic<Kept*> kept_head{nullptr};

}  // namespace

void KeepInherited(const void* object) {
  Kept* node = new Kept{object, kept_head.load(std::memory_order_relaxed)};
  while (!kept_head.compare_exchange_weak(node->next, node, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

}  // namespace codecvisor::api
