"""Named references of one branch: tags (``tag/tag-<name>``) and consumers (``consumer/consumer-<id>``),
written through :func:`engine.meta.publish.publish_ref`.

A tag file is the tagged snapshot's JSON (plus optional creation time and retention), so a
tag keeps its snapshot readable after the snapshot file itself expired. A consumer file records
the next snapshot a streaming reader will read, so expiration keeps what it still needs.

Publishing a reference (tags, consumers, the retention mark, the EARLIEST hint) is one protocol,
:func:`engine.meta.publish.publish_ref`: create-if-absent (or an atomic replace), then verify what
the reference names still holds (e.g. the tagged snapshot still exists), and on failure undo only what this
attempt wrote. Together with expiration re-reading every reference *after* it deleted snapshot
files and *before* it deletes data files, this makes creation and expiration see each other
(write-then-read on both sides): either the creator's check sees the snapshot gone and removes
its reference, or the expiration sees the reference and keeps its files.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.errors import CorruptMetadataError, NoSuchTagError, SnapshotExpiredConcurrentlyError
from engine.identifier import validate_name
from engine.io import FileIO
from engine.meta.paths import TablePaths
from engine.meta.publish import publish_ref
from engine.meta.snapshot import Consumer, Tag

# A branch made from a tag or snapshot pins its base with this tag on the branch it came from:
# Java Paimon's expiration protects only tags, so without it Java would delete the branch's files.
BASE_TAG_PREFIX = "branch-base-"


def base_tag_name(branch: str) -> str:
    """The tag that pins a branch's base snapshot on the branch it was created from."""
    return f"{BASE_TAG_PREFIX}{branch}"


def validate_ref_name(kind: str, name: str, *, new: bool = False) -> None:
    validate_name(kind, name, new=new)


def snapshot_still_exists(io: FileIO, paths: TablePaths, snapshot_id: int, what: str) -> Callable[[], None]:
    """A ``verify`` for :func:`publish_ref`: the snapshot file must still exist.

    Expiration deletes every snapshot file of its range before it deletes any data file and re-reads
    every reference in between, so a snapshot file that exists after the reference was written
    means any expiration of it will see the reference.
    """

    def check() -> None:
        if not io.exists(paths.snapshot_file(snapshot_id)):
            raise SnapshotExpiredConcurrentlyError(
                f"snapshot {snapshot_id} no longer exists (it was expired, possibly while {what} was being "
                f"created), so {what} was not created; name a newer snapshot"
            )

    return check


class TagStore:
    """Tags of one branch.

    Calling the store lists the tags (``table.tags()`` → name → Tag, as Paimon's ``Table.tags``);
    its methods read and write single tag files. Tag *operations* (create, delete with file
    cleanup, expire) live in ``engine.ops.tags``.
    """

    def __init__(self, io: FileIO, paths: TablePaths) -> None:
        self.io = io
        self.paths = paths

    def names(self) -> list[str]:
        out = []
        for status in self.io.list_dir(self.paths.tag_dir):
            name = status.path.rsplit("/", 1)[-1]
            if name.startswith("tag-") and not status.is_dir:
                out.append(name[len("tag-") :])
        return sorted(out)

    def exists(self, name: str) -> bool:
        return self.io.exists(self.paths.tag_file(name))

    def get(self, name: str) -> Tag:
        validate_ref_name("tag", name)
        path = self.paths.tag_file(name)
        try:
            text = self.io.read_bytes(path)
        except FileNotFoundError:
            raise NoSuchTagError(f"tag '{name}' does not exist; SHOW TAGS lists the existing ones") from None
        try:
            return Tag.from_json(text)
        except CorruptMetadataError as e:
            raise CorruptMetadataError(f"tag file {path} is corrupt: {e}") from e

    def all(self) -> dict[str, Tag]:
        """Every tag of the branch; one deleted while listing is left out."""
        out = {}
        for n in self.names():
            try:
                out[n] = self.get(n)
            except NoSuchTagError:
                continue
        return out

    def __call__(self) -> dict[str, Tag]:
        return self.all()

    def write(self, name: str, tag: Tag) -> None:
        validate_ref_name("tag", name, new=True)
        publish_ref(self.io, self.paths.tag_file(name), tag.to_json().encode(), replace=True)

    def delete(self, name: str) -> None:
        self.io.delete(self.paths.tag_file(name))


def _latest_listed(io: FileIO, paths: TablePaths) -> int | None:
    from engine.meta.paths import parse_versioned_id

    names = [s.path.rsplit("/", 1)[-1] for s in io.list_dir(paths.snapshot_dir)]
    ids = [parse_versioned_id(name, "snapshot-") for name in names]
    found = [i for i in ids if i is not None]
    return max(found) if found else None


class ConsumerStore:
    """Streaming consumers' progress of one branch."""

    def __init__(self, io: FileIO, paths: TablePaths) -> None:
        self.io = io
        self.paths = paths

    def ids(self) -> list[str]:
        out = []
        for status in self.io.list_dir(self.paths.consumer_dir):
            name = status.path.rsplit("/", 1)[-1]
            if name.startswith("consumer-"):
                out.append(name[len("consumer-") :])
        return sorted(out)

    def get(self, consumer_id: str) -> Consumer | None:
        path = self.paths.consumer_file(consumer_id)
        try:
            text = self.io.read_bytes(path)
        except FileNotFoundError:
            return None
        try:
            return Consumer.from_json(text)
        except CorruptMetadataError as e:
            raise CorruptMetadataError(f"consumer file {path} is corrupt: {e}") from e

    def all(self) -> dict[str, Consumer]:
        out = {}
        for cid in self.ids():
            c = self.get(cid)
            if c is not None:
                out[cid] = c
        return out

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Move a consumer's position (it only ever protects ``next_snapshot`` and later)."""
        validate_ref_name("consumer", consumer_id)
        data = Consumer(next_snapshot).to_json().encode()
        publish_ref(self.io, self.paths.consumer_file(consumer_id), data, replace=True)

    def start(self, consumer_id: str, next_snapshot: int) -> Consumer:
        """Record a new consumer at ``next_snapshot`` when its stream starts; an existing consumer
        (another stream with this id got there first) is returned unchanged.

        After the file is created, ``next_snapshot`` must still exist (unless it is not committed
        yet): else an expiration removed it meanwhile, the consumer file is removed again and
        :class:`SnapshotExpiredConcurrentlyError` tells the caller to start again. Once this
        returns, expiration keeps ``next_snapshot`` and every later snapshot (it re-reads the
        consumers after deleting snapshot files and restores any a consumer needs).
        """
        validate_ref_name("consumer", consumer_id)
        path = self.paths.consumer_file(consumer_id)
        consumer = Consumer(next_snapshot)
        check = snapshot_still_exists(self.io, self.paths, next_snapshot, f"consumer '{consumer_id}'")

        def verify() -> None:
            latest = _latest_listed(self.io, self.paths)
            if latest is not None and next_snapshot <= latest:
                check()

        if publish_ref(self.io, path, consumer.to_json().encode(), verify=verify):
            return consumer
        existing = self.get(consumer_id)
        if existing is None:  # removed between our attempt and the read: its owner gave up
            raise SnapshotExpiredConcurrentlyError(
                f"consumer '{consumer_id}' was removed while this stream started; start the stream again")
        return existing

    def delete(self, consumer_id: str) -> None:
        self.io.delete(self.paths.consumer_file(consumer_id))
