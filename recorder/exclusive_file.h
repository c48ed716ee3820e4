// How a trace writer creates its files, safe against a second writer and against planted links.
// Every file is created new (O_CREAT | O_EXCL | O_NOFOLLOW): a symlink at the path is refused,
// never written through, and no file another process has open is truncated. The streamed trace
// file (the .partial) is also locked (flock) for as long as its writer holds it, rename into
// place included: a second writer of the same path finds it locked and stops before writing
// anything. A killed run's file is unlocked (the kernel drops a dead process's locks), so the
// next run of that path replaces it, as it always did.
#pragma once
#include <string>

namespace minfer::trace {

// Creates `path` as a new, empty regular file, locked, open read-write; returns the descriptor.
// A file a killed run left there is replaced. Throws Error naming `path` when another writer
// holds it, or when a symlink or anything but a regular file is there.
int claim_file(const std::string& path);

// Creates `path` new, open read-write (and locked, when asked): a file that derives its name from
// one the caller has claimed (a journal, a temporary), so a regular file already there is a
// killed run's leftover and is removed first. Throws Error naming `path` on a symlink or
// anything but a regular file there.
int create_owned_file(const std::string& path, bool locked = false);

// A new file beside `stem` under a name no other writer uses (stem + ".tmp.<pid>.<n>"), open
// read-write; `name` receives it. For one-shot outputs that are renamed into place.
int create_unique_file(const std::string& stem, std::string& name);

// True when `path` still names the file open as `fd` (nobody removed or replaced it).
bool still_names(const std::string& path, int fd);

// Locks the existing file at `path` before rewriting it (recovery): a descriptor holding the
// lock, or -1 when nothing is there. Throws Error naming `path` when a live writer holds it.
int lock_existing(const std::string& path);

}  // namespace minfer::trace
