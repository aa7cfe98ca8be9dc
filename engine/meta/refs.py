"""Named references of one branch: tags (``tag/tag-<name>``) and consumers (``consumer/consumer-<id>``).

A tag file is the tagged snapshot's JSON (plus optional creation time and retention), so a
tag keeps its snapshot readable after the snapshot file itself expired. A consumer file records
the next snapshot a streaming reader will read, so expiration keeps what it still needs.
"""

from __future__ import annotations

from engine.errors import CorruptMetadataError, NoSuchTagError
from engine.identifier import validate_name
from engine.io import FileIO
from engine.meta.paths import TablePaths
from engine.meta.snapshot import Consumer, Tag


def validate_ref_name(kind: str, name: str, *, new: bool = False) -> None:
    validate_name(kind, name, new=new)


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
        self.io.write_text(self.paths.tag_file(name), tag.to_json())

    def delete(self, name: str) -> None:
        self.io.delete(self.paths.tag_file(name))


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
        validate_ref_name("consumer", consumer_id)
        self.io.write_text(self.paths.consumer_file(consumer_id), Consumer(next_snapshot).to_json())

    def delete(self, consumer_id: str) -> None:
        self.io.delete(self.paths.consumer_file(consumer_id))
