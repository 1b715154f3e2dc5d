// The `codecvisor` command line. Each subcommand is a thin layer over the
// library; this file only parses arguments and prints.

#include <cstdio>
#include <iostream>

#include "CLI/CLI.hpp"
#include "tools/bench/ipc_bench.h"

namespace codecvisor {
namespace {

int RunBenchIpc(const bench::IpcBenchOptions& options, bool json) {
  auto result = bench::RunIpcBench(options);
  if (!result.ok()) {
    std::cerr << "codecvisor bench ipc: " << result.status() << "\n";
    return 1;
  }
  std::cout << (json ? result->ToJson() + "\n" : result->ToText());
  return 0;
}

}  // namespace
}  // namespace codecvisor

int main(int argc, char** argv) {
  CLI::App app{"codecvisor: video decoding through sandboxed, supervised backend processes"};
  app.require_subcommand(1);

  auto* bench = app.add_subcommand("bench", "measure codecvisor against its baselines");
  bench->require_subcommand(1);

  codecvisor::bench::IpcBenchOptions ipc_options;
  bool ipc_json = false;
  auto* ipc = bench->add_subcommand("ipc", "channel round trip and frame throughput vs. raw futex and local memory");
  ipc->add_flag("--json", ipc_json, "print one JSON object");
  ipc->add_option("--round-trips", ipc_options.round_trips, "round trips per measurement")->check(CLI::PositiveNumber);
  ipc->add_option("--frames", ipc_options.frames, "frames per measurement")->check(CLI::PositiveNumber);
  ipc->add_option("--rounds", ipc_options.rounds, "measurement rounds; the median is reported")->check(CLI::PositiveNumber);
  ipc->add_option("--slots", ipc_options.slots, "arena slots for the frame measurement")->check(CLI::Range(1, 256));
  int exit_code = 0;
  ipc->callback([&] { exit_code = codecvisor::RunBenchIpc(ipc_options, ipc_json); });

  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
