"""The engine's distributed front door: read, write and commit builders (see each module).

```
 table.new_read_builder()  ─► ReadBuilder ─► .new_scan().plan() ─► splits ─► .new_read().read(split)
                                           └► .new_stream_scan() (positions, change splits)
 table.new_write_builder() ─► WriteBuilder ─► .new_write() / .new_task_write() ─► commit messages
                                           └► .new_commit() ─► CommitBuilder.commit(messages)
                                                  publish one snapshot, then the post-commit hooks
```
Every builder and every step it hands out pickles, so a driver plans and commits while tasks
read and write. The post-commit work (compaction, automatic tags, partition and snapshot
expiration) runs in exactly one place: :mod:`engine.builders.hooks`, called by the commit.
"""
