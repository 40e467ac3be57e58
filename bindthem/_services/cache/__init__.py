"""The content-hashed build cache shared by bindthem.build and bindthem.cuda.build.

A build lives in ``<cache>/<stem><tag>-<hash>/``, the hash taken over what the
caller names (header, YAML, generated source, compiler identity, flags).
``deps.json`` (the entry's manifest) records the output's file name, size and
SHA-256, the entry's full key, a SHA-256 of every file the compiler read (its
``-MD`` depfile), so editing an included header rebuilds, and what the
compiler printed (its warnings, replayed on a cache hit): on two JSON lines,
the second the hashes of the files under the compiler's folders, which a hit
reads only where such a folder changed (read_manifest). A dependency whose
size, mtime, ctime and inode are those recorded is not re-hashed: a cache hit
costs a ``stat`` per header, not a read; and the headers under the compiler's
own include folders (``system_dirs``) a ``stat`` per folder: a package
manager replaces a file by renaming a new one in, which changes the folder
(a file of those folders edited in place is not seen). The output's name carries a hash of
those files: the dynamic loader hands back an already loaded library for a
path it has seen, so a rebuild must not reuse the old name.

Trust (docs/build.rst#build-cache): bindthem uses a cache folder only when it
is owned by the user (or root; for root, only by root) and writable by no one
else, unless ``$BINDTHEM_CACHE_GROUP`` opts a group in; otherwise it warns
once and uses a private cache (``_root._private_root``). Everything in an entry is
opened relative to the entry folder's descriptor with ``O_NOFOLLOW``; files
are created ``O_EXCL`` in a private ``mkdtemp`` folder inside the entry,
verified, ``fsync``-ed and renamed in. A hit is verified before it is used:
the output must be a regular file of a trusted owner with the recorded size,
and its SHA-256 is checked the first time a process uses it. An entry that
fails is rebuilt, the new output renamed over the bad one. Loaders hold a
shared ``flock`` on the entry's ``.lock`` from the hit until their ``load``
callback returns; builders an
exclusive one; the evictor takes an exclusive one without waiting, and moves
the folder away before removing it. A group entry (``cells/*``,
``sources/*``, ...: below) has a ``.lock`` too, held shared by whoever
writes it or compiles from it, for as long as it does (:func:`using_group`),
so eviction never removes the files of a compile that runs. A cache that
cannot be written (a read-only install) serves verified hits with no lock
file and no write; its misses build into the private cache.

What the compiler read is what was recorded (ccache's rule): a file of the
depfile outside the compiler's own folders and outside the cache whose
mtime or ctime is not older than the compile's start may have changed
while it was read, and one that vanished did; the output is then discarded
and compiled again, ``COMPILE_TRIES`` times at most. (The compiler starts a
clock tick after that start: file times come from the kernel's coarse
clock, which runs up to a tick behind; see ``_entry._stamp_lag``.) A failure
that is no verdict on the source (a compiler killed by a signal or out of
memory, a file it reads missing or changing, a full disk) is a BuildError
with ``transient`` set (``_entry._failure``), which on demand does not remember.

The cache is bounded: after each compile, the least recently used entries
(build folders, ``cells/*`` of the notebook magic, ``sources/*`` written when
unpickling, ``compilers/*``: what a compiler binary's ``--version`` printed,
``on-demand/*``: the instantiations calls made, for stubs) are removed until
it holds at most ``$BINDTHEM_CACHE_SIZE`` (default 1G;
``0`` or ``none``: unbounded), and what killed processes left (temporary
files, ``*.removed-*`` folders) is removed. A cache hit marks its entry used.
``python -m bindthem cache list|size|clear`` inspects and empties it.

The modules, one job each, imported bottom up (none imports this package):

- ``_root``: where the cache is (``cache_root``), the names of its layout,
  and whom it trusts (``open_root``, ``Root``, ``_untrusted``,
  ``_private_root``); it imports no other module of the cache.
- ``_fs``: files and folders opened relative to a folder's descriptor
  without following links (``_open_dir``, ``_open_file``, ``_read_at``,
  ``_publish``, ``write_once``) and the full-disk error; imports ``_root``.
- ``_manifest``: ``deps.json``, what a build read (``read_manifest``,
  ``Deps``, ``_record_deps``, ``_stat_key``) and whether an entry is still a
  verified hit (``_hit``); imports ``_root`` and ``_fs``.
- ``_evict``: listing and bounding the cache (``entries``, ``remove_entry``,
  ``sweep``, ``evict``, ``cache_limit``); imports ``_root``, ``_fs`` and
  ``_manifest``.
- ``_entry``: an entry hit, locked, compiled and verified
  (``compile_cached``, ``run_commands``), the group entries held while used
  (``using_group``, ``group_read``, ``group_write``) and the compiler's
  flags (``flag_list``); imports all four.

A test that replaces a private function replaces it in the module that
calls it (``_entry._compile``, ``_entry.run_commands``,
``_manifest._stat_key``, ``_manifest.hash_file``): a name re-exported here is
a copy, and the package's own calls do not look it up here.
"""

from ._entry import (
    compile_cached,
    flag_list,
    group_read,
    group_write,
    run_commands,
    shell_words,
    using_group,
)
from ._evict import cache_limit, entries, evict, remove_entry, sweep
from ._fs import write_once
from ._manifest import hash_file, read_manifest
from ._root import DEPS, GROUPS, LOCK, REMOVED, cache_root, open_root, resolve

__all__ = ["DEPS", "GROUPS", "LOCK", "REMOVED", "cache_limit", "cache_root", "compile_cached",
           "entries", "evict", "flag_list", "group_read", "group_write",
           "hash_file", "open_root", "read_manifest", "remove_entry", "resolve", "run_commands",
           "shell_words", "sweep", "using_group", "write_once"]
