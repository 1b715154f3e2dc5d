#include "api/inherited.h"

#include <mutex>
#include <vector>

namespace codecvisor::api {

void KeepInherited(const void* object) {
  // Never destroyed: the list must outlive every static destructor that
  // could still drop an inherited object.
  static std::mutex* const mu = new std::mutex;
  static std::vector<const void*>* const kept = new std::vector<const void*>;
  std::lock_guard<std::mutex> lock(*mu);
  kept->push_back(object);
}

}  // namespace codecvisor::api
