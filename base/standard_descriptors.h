// Keeps descriptors 0, 1 and 2 from being handed out as the host's own.
//
// A process started with stdin, stdout or stderr closed (a daemon, a
// service manager's unit, `prog 2>&-`) gets those numbers back from its next
// open, pipe or socketpair. Were one of the host's channel sockets or
// memfds to land on 2, every write to stderr in the process (the host's own
// warnings, the backends' relayed output, FFmpeg's or the user's logging)
// would go into it: a backend reads that as a forged message. So the host
// fills each closed standard descriptor with /dev/null before it opens
// anything, as glibc does for a set-user-ID program; opened for the other
// direction (0 write-only, 1 and 2 read-only), so that a read of stdin or a
// write to stdout or stderr still fails with EBADF, as on the closed one:
// a command writing its output to a closed stdout reports it, rather than
// losing the output into /dev/null.
//
// Thread-safety: may be called from any thread. A descriptor another thread
// opens at the same moment may take the free number first; then that
// number is no longer free, which is all this asks.

#ifndef CODECVISOR_BASE_STANDARD_DESCRIPTORS_H_
#define CODECVISOR_BASE_STANDARD_DESCRIPTORS_H_

namespace codecvisor {

// Opens /dev/null (as above, inherited across exec, as a standard stream
// is) on each of 0, 1 and 2 that is closed; open ones are left as they are.
// Returns false if one is still closed afterwards (no /dev/null to open).
bool FillClosedStandardDescriptors();

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_STANDARD_DESCRIPTORS_H_
