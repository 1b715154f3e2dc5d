// File: backends/testing/attacks.h
//
// What the `hostile` test backend tries from inside the sandbox: the escape
// attempts of issue 5. Each returns a one-line verdict naming the attack and
// what happened ("read /etc/shadow: denied (Permission denied)"), or the
// process dies in the attempt when seccomp traps the syscall. An attack
// that works says "SUCCEEDED", which the escape tests treat as a failure.

#ifndef CODECVISOR_BACKENDS_TESTING_ATTACKS_H_
#define CODECVISOR_BACKENDS_TESTING_ATTACKS_H_

#include <string>

namespace codecvisor::testing {

// `host_pid` and `port` (a listener on 127.0.0.1) come from the test.
std::string Attack(const std::string& name, int host_pid, int port);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_BACKENDS_TESTING_ATTACKS_H_
