#include "backends/sdk/runner/frame_pool.h"

#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "ipc/region.h"
#include "ipc/socket.h"
#include "ipc/wait_policy.h"

namespace codecvisor::runner {
namespace {

class FramePoolTest : public ::testing::Test {
 protected:
  FramePoolTest() : region_(ipc::Region::Create({4096, 4096, 3, 8192, 2})), arena_(&*region_) {
    EXPECT_EQ(pipe(fds_), 0);
    alive_.emplace(fds_[0], -1, false);
  }
  ~FramePoolTest() override {
    close(fds_[0]);
    close(fds_[1]);
  }

  absl::StatusOr<ipc::Region> region_;
  ipc::BackendArena arena_;
  int fds_[2] = {-1, -1};
  std::optional<ipc::PeerLiveness> alive_;  // a peer that stays alive
  ipc::WaitPolicy wait_;
  FramePool pool_;
  cv_frame_pool* abi_ = pool_.abi();
};

TEST_F(FramePoolTest, BorrowsNothingBeforeTheArenaIsAttached) {
  uint64_t capacity = 7;
  EXPECT_EQ(abi_->borrow(abi_, &capacity), nullptr);
  EXPECT_EQ(capacity, 7u);
  FrameTarget target;
  cv_error error{};
  EXPECT_EQ(abi_->lend(abi_, &target.buffer, region_->slot(1), &error), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message), "");
  abi_->give_back(abi_, region_->slot(1));  // harmless
}

TEST_F(FramePoolTest, ALentSlotBecomesTheFrameBuffer) {
  pool_.Attach(&arena_);
  uint64_t capacity = 0;
  uint8_t* a = abi_->borrow(abi_, &capacity);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(capacity, 8192u);
  uint8_t* b = abi_->borrow(abi_, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(abi_->borrow(abi_, &capacity), nullptr) << "a pool of 2";

  FrameTarget target;
  cv_error error{};
  ASSERT_EQ(abi_->lend(abi_, &target.buffer, b, &error), CV_OK) << error.message;
  ASSERT_TRUE(target.slot.has_value());
  EXPECT_EQ(target.slot->index, 2u);
  EXPECT_EQ(target.buffer.data, b);
  EXPECT_EQ(target.buffer.capacity, 8192u);
  EXPECT_EQ(abi_->lend(abi_, &target.buffer, b, &error), CV_OK) << "the same slot again is a no-op";
  EXPECT_EQ(abi_->lend(abi_, &target.buffer, a, &error), CV_ERROR_INVALID_ARGUMENT)
      << "a second buffer for the same frame";

  FrameTarget other;
  EXPECT_EQ(abi_->lend(abi_, &other.buffer, region_->slot(0), &error), CV_ERROR_INVALID_ARGUMENT) << "a copy slot";
  EXPECT_EQ(abi_->lend(abi_, &other.buffer, a + 64, &error), CV_ERROR_INVALID_ARGUMENT) << "inside a slot";
  arena_.Lend(target.slot->index);
  EXPECT_EQ(abi_->lend(abi_, &other.buffer, b, &error), CV_ERROR_INVALID_ARGUMENT) << "the host holds it";
  EXPECT_FALSE(other.slot.has_value());

  // A buffer lent before the call (or acquired) gives way to the pool
  // slot: the copy slot goes back free.
  FrameTarget early;
  auto copy_slot = arena_.Acquire(ipc::Clock::now() + std::chrono::seconds(1), *alive_, &wait_);
  ASSERT_TRUE(copy_slot.ok()) << copy_slot.status();
  PointAt(&early, *copy_slot);
  ASSERT_EQ(arena_.FreeSlots(), 0u);
  ASSERT_EQ(abi_->lend(abi_, &early.buffer, a, &error), CV_OK) << error.message;
  EXPECT_EQ(early.buffer.data, a);
  EXPECT_EQ(arena_.FreeSlots(), 1u);
  EXPECT_EQ(abi_->lend(abi_, &early.buffer, b, &error), CV_ERROR_INVALID_ARGUMENT) << "a second pool slot";
  arena_.Lend(early.slot->index);

  abi_->give_back(abi_, a);
  abi_->give_back(abi_, b);
  EXPECT_EQ(arena_.borrowed_count(), 0u);
  EXPECT_EQ(abi_->borrow(abi_, nullptr), nullptr) << "the host holds both until it frees them";
}

// The vendor breaking cv_frame_pool's rules is said on stderr (which the
// host relays and the conformance suite's frame_pool check fails): a slot
// given back twice, at once and once per session; borrows still open when
// close_session returned, at close. Before, both passed unseen.
TEST_F(FramePoolTest, BreakingThePoolsRulesIsReported) {
  pool_.Attach(&arena_);
  uint8_t* a = abi_->borrow(abi_, nullptr);
  uint8_t* b = abi_->borrow(abi_, nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ::testing::internal::CaptureStderr();
  abi_->give_back(abi_, a);
  abi_->give_back(abi_, a);  // twice
  abi_->give_back(abi_, a);  // said once
  pool_.ReportMisuseAtClose();  // b is still borrowed
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(said,
            "codecvisor-backend: frame pool: give_back() of an address that was not a borrowed slot (a slot given "
            "back twice, or never borrowed)\n"
            "codecvisor-backend: frame pool: 1 slot(s) still borrowed when close_session returned; every borrow "
            "must end before it returns\n");
  abi_->give_back(abi_, b);
  ::testing::internal::CaptureStderr();
  pool_.ReportMisuseAtClose();  // nothing open now
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace codecvisor::runner
