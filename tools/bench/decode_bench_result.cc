// DecodeBenchResult's two renderings (decode_bench.h): the JSON line and
// the text table.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/bench/decode_bench.h"
#include "tools/bench/stats.h"
#include "tools/cli/json.h"

namespace codecvisor::bench {

std::string DecodeBenchResult::ToJson() const {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("file").String(file).Key("codec").String(codec).Key("width").Int(width).Key("height").Int(height);
  w.Key("frames").Int(frames).Key("repeats").Int(repeats).Key("chunk_frames").Int(chunk_frames);
  w.Key("random_chunk_frames").Int(random_chunk_frames).Key("threads").Int(threads).Key("arena_slots").Int(arena_slots);
  w.Key("in_process_buffers").Int(in_process_buffers);
  w.Key("rounds").Int(rounds);
  w.Key("in_process_fps").Double(Rounded(in_process_fps, 1));
  w.Key("out_of_process_fps").Double(Rounded(out_of_process_fps, 1));
  w.Key("out_of_process_unsandboxed_fps").Double(Rounded(out_of_process_unsandboxed_fps, 1));
  w.Key("ffmpeg_cli_fps").Double(Rounded(ffmpeg_cli_fps, 1));
  w.Key("ratio").Double(Rounded(ratio, 3));
  w.Key("sandbox_cost").Double(Rounded(sandbox_cost, 3));
  w.Key("cli_ratio").Double(Rounded(cli_ratio, 3));
  w.Key("in_process_cpu_ms_per_frame").Double(Rounded(in_process_cpu_ms_per_frame, 3));
  w.Key("out_of_process_cpu_ms_per_frame").Double(Rounded(out_of_process_cpu_ms_per_frame, 3));
  w.Key("out_of_process_host_cpu_ms_per_frame").Double(Rounded(out_of_process_host_cpu_ms_per_frame, 3));
  w.Key("out_of_process_host_cpu_share").Double(Rounded(out_of_process_host_cpu_share, 3));
  w.Key("in_process_caller_cpu_ms_per_frame").Double(Rounded(in_process_caller_cpu_ms_per_frame, 4));
  w.Key("in_process_other_cpu_ms_per_frame").Double(Rounded(in_process_other_cpu_ms_per_frame, 4));
  w.Key("out_of_process_session_cpu_ms_per_frame").Double(Rounded(out_of_process_session_cpu_ms_per_frame, 4));
  w.Key("out_of_process_other_cpu_ms_per_frame").Double(Rounded(out_of_process_other_cpu_ms_per_frame, 4));
  w.Key("out_of_process_unsandboxed_cpu_ms_per_frame").Double(Rounded(out_of_process_unsandboxed_cpu_ms_per_frame, 3));
  w.Key("random_frames").Int(random_frames);
  w.Key("random_in_process_fps").Double(Rounded(random_in_process_fps, 1));
  w.Key("random_out_of_process_fps").Double(Rounded(random_out_of_process_fps, 1));
  w.Key("random_ratio").Double(Rounded(random_ratio, 3));
  auto rounds_of = [&w](const char* key, const std::vector<double>& values) {
    w.Key(key).BeginArray();
    for (double v : values) w.Double(Rounded(v, 3));
    w.EndArray();
  };
  rounds_of("out_of_process_slot_use", out_of_process_slot_use);
  w.Key("in_process_caller_wakeups_per_frame").Double(Rounded(in_process_caller_wakeups_per_frame, 3));
  w.Key("out_of_process_host_wakeups_per_frame").Double(Rounded(out_of_process_host_wakeups_per_frame, 3));
  w.Key("chunk_pairs").Int(chunk_pairs);
  rounds_of("chunk_ratio_quartiles", chunk_ratio_quartiles);
  rounds_of("chunk_random_ratio_quartiles", chunk_random_ratio_quartiles);
  rounds_of("chunk_sandbox_cost_quartiles", chunk_sandbox_cost_quartiles);
  if (!compare_runner.empty()) {
    w.Key("compare_runner").String(compare_runner);
    w.Key("compare_runner_fps").Double(Rounded(compare_runner_fps, 1));
    w.Key("compare_runner_ratio").Double(Rounded(compare_runner_ratio, 3));
    w.Key("compare_runner_cpu_ms_per_frame").Double(Rounded(compare_runner_cpu_ms_per_frame, 3));
    w.Key("compare_runner_session_cpu_ms_per_frame").Double(Rounded(compare_runner_session_cpu_ms_per_frame, 4));
    w.Key("compare_runner_host_wakeups_per_frame").Double(Rounded(compare_runner_host_wakeups_per_frame, 3));
    rounds_of("chunk_compare_runner_ratio_quartiles", chunk_compare_runner_ratio_quartiles);
  }
  rounds_of("round_ratios", round_ratios);
  w.Key("host_rss_kb_300").Int(host_rss_kb_300).Key("host_rss_kb_3000").Int(host_rss_kb_3000);
  w.Key("host_shared_kb_300").Int(host_shared_kb_300).Key("host_shared_kb_3000").Int(host_shared_kb_3000);
  w.Key("host_private_kb_300").Int(host_private_kb_300).Key("host_private_kb_3000").Int(host_private_kb_3000);
  WriteTargets(w, targets);
  w.EndObject();
  return w.str();
}

std::string DecodeBenchResult::ToText() const {
  std::string out = absl::StrFormat(
      "%s: %s %ux%u, %d frames (x%d per sequential pass, in turns of %d frames), threads %u, %u arena slots, "
      "%u in-process buffer(s), median of %d rounds\n",
      file, codec, width, height, frames, repeats, chunk_frames, threads, arena_slots, in_process_buffers, rounds);
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps, CPU %.3f ms/frame\n", "in process (cpu backend linked in)",
                        in_process_fps, in_process_cpu_ms_per_frame);
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps, CPU %.3f ms/frame (host %.3f, %.1f%% of in process %s); ratio %.3f %s\n",
                        "out of process, sandboxed", out_of_process_fps, out_of_process_cpu_ms_per_frame,
                        out_of_process_host_cpu_ms_per_frame, out_of_process_host_cpu_share * 100,
                        TargetNote(targets, "out_of_process_host_cpu_share"), ratio,
                        TargetNote(targets, "ratio"));
  absl::StrAppendFormat(&out,
                        "  %-34s in process: caller %.4f, other threads %.4f; out of process: host %.4f, "
                        "runner session %.4f, child's other threads %.4f\n",
                        "CPU ms/frame by thread", in_process_caller_cpu_ms_per_frame, in_process_other_cpu_ms_per_frame,
                        out_of_process_host_cpu_ms_per_frame, out_of_process_session_cpu_ms_per_frame,
                        out_of_process_other_cpu_ms_per_frame);
  std::string slots;
  for (double share : out_of_process_slot_use) absl::StrAppendFormat(&slots, " %.0f%%", share * 100);
  absl::StrAppendFormat(&out, "  %-34s%s\n", "frames per slot, most used first", slots);
  absl::StrAppendFormat(&out, "  %-34s in process: caller %.3f; out of process: host %.3f\n",
                        "calling thread woken per frame", in_process_caller_wakeups_per_frame,
                        out_of_process_host_wakeups_per_frame);
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps, CPU %.3f ms/frame; sandbox cost %.1f%% %s\n",
                        "out of process, no sandbox", out_of_process_unsandboxed_fps,
                        out_of_process_unsandboxed_cpu_ms_per_frame, sandbox_cost * 100,
                        TargetNote(targets, "sandbox_cost"));
  absl::StrAppendFormat(&out, "  %-34s %8.1f fps (wall clock, process start included); out of process / CLI %.3f %s\n",
                        "ffmpeg CLI", ffmpeg_cli_fps, cli_ratio, TargetNote(targets, "cli_ratio"));
  absl::StrAppendFormat(&out,
                        "  %d random frames (in turns of %d), exact seek: in process %.1f fps, "
                        "out of process %.1f fps; ratio %.3f %s\n",
                        random_frames, random_chunk_frames, random_in_process_fps, random_out_of_process_fps,
                        random_ratio, TargetNote(targets, "random_ratio"));
  auto quartiles = [](const std::vector<double>& q) {
    return q.size() == 3 ? absl::StrFormat("%.3f / %.3f / %.3f", q[0], q[1], q[2]) : std::string("-");
  };
  absl::StrAppendFormat(&out,
                        "  per chunk pair (%d), 25th / 50th / 75th percentile: ratio %s; random ratio %s; "
                        "sandbox cost %s\n",
                        chunk_pairs, quartiles(chunk_ratio_quartiles), quartiles(chunk_random_ratio_quartiles),
                        quartiles(chunk_sandbox_cost_quartiles));
  if (!compare_runner.empty()) {
    absl::StrAppendFormat(&out,
                          "  %-34s %8.1f fps, CPU %.3f ms/frame (session %.4f), host woken %.3f per frame; "
                          "sandboxed / it %.3f (per chunk pair %s); runner %s\n",
                          "compared runner, sandboxed", compare_runner_fps, compare_runner_cpu_ms_per_frame,
                          compare_runner_session_cpu_ms_per_frame, compare_runner_host_wakeups_per_frame,
                          compare_runner_ratio, quartiles(chunk_compare_runner_ratio_quartiles), compare_runner);
  }
  absl::StrAppendFormat(&out, "  host peak RSS: %d kB after %d frames, %d kB after %d frames\n", host_rss_kb_300,
                        kRssFramesFirst, host_rss_kb_3000, kRssFramesLast);
  absl::StrAppendFormat(&out, "  host current RSS: %d kB after %d frames, %d kB after %d frames\n",
                        host_shared_kb_300 + host_private_kb_300, kRssFramesFirst,
                        host_shared_kb_3000 + host_private_kb_3000, kRssFramesLast);
  absl::StrAppendFormat(&out, "    of which shared (frame arena, channel): %d kB, then %d kB\n", host_shared_kb_300,
                        host_shared_kb_3000);
  absl::StrAppendFormat(&out, "    the host's own: %d kB, then %d kB %s\n", host_private_kb_300, host_private_kb_3000,
                        TargetNote(targets, "host_private_kb_3000"));
  return out;
}

}  // namespace codecvisor::bench
