"""Reads an offline W&B run (`run-<id>.wandb`) back, record by record, with wandb's own protobuf schema.

wandb 0.31 writes the file from its Go core and ships no Python reader (the
`wandb.sdk.internal.datastore` of earlier releases is gone), but it ships the
record schema, `wandb.proto.wandb_internal_pb2.Record`. The framing is
LevelDB's log format, as W&B documents it in that old reader: a 7-byte file
header (`:W&B`, magic 0xBEE1, version 0), then 32 KiB blocks of chunks, each
with a 7-byte header (CRC-32 of the type byte and the payload, length, type
FULL/FIRST/MIDDLE/LAST); a block tail under 7 bytes is padding. Test code
only: SynBench itself never reads W&B files.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2

BLOCK = 32 * 1024
HEADER = struct.Struct("<IHB")  # crc32, length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[wandb_internal_pb2.Record]:
    """Every record of the transaction log, each chunk's checksum verified."""
    data = path.read_bytes()
    if data[:4] != b":W&B" or data[4:6] != b"\xe1\xbe" or data[6] != 0:
        raise ValueError(f"{path} is not a W&B transaction log (version 0)")
    out, pos, pending = [], 7, b""
    while pos + HEADER.size <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER.size:
            pos += left
            continue
        crc, length, kind = HEADER.unpack_from(data, pos)
        if kind == 0 and length == 0:  # zero padding to the end of the block
            pos += left
            continue
        payload = data[pos + HEADER.size : pos + HEADER.size + length]
        if zlib.crc32(bytes([kind]) + payload) & 0xFFFFFFFF != crc:
            raise ValueError(f"{path}: bad checksum at byte {pos}")
        pos += HEADER.size + length
        pending = payload if kind in (FULL, FIRST) else pending + payload
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            out.append(record)
    return out


def _items(items: Any) -> dict[str, Any]:
    """A record's items (`key`, or a `nested_key` path such as an image's fields, and `value_json`) as a dict."""
    out: dict[str, Any] = {}
    for item in items:
        *parents, last = [item.key] if item.key else list(item.nested_key)
        node = out
        for parent in parents:
            node = node.setdefault(parent, {})
        node[last] = json.loads(item.value_json)
    return out


@dataclass
class OfflineRun:
    """What an offline run holds: its run record's group and job type, config, last summary, history rows."""

    group: str = ""
    job_type: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int | None = None

    @classmethod
    def read(cls, path: Path, timeout_s: float = 60.0) -> "OfflineRun":
        """The run in `path`, once its exit record is there: wandb's core writes the log on its own after
        `run.finish()` returns, so a run read straight away may be cut short."""
        deadline = time.monotonic() + timeout_s
        while not any(r.WhichOneof("record_type") == "exit" for r in records(path)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} has no exit record after {timeout_s:g} s")
            time.sleep(0.2)
        run = cls()
        for record in records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                run.group, run.job_type = record.run.run_group, record.run.job_type
                run.config |= _items(record.run.config.update)
            elif kind == "config":
                run.config |= _items(record.config.update)
            elif kind == "summary":
                run.summary |= _items(record.summary.update)
                for item in record.summary.remove:
                    run.summary.pop(item.key or item.nested_key[0], None)
            elif kind == "history":
                run.history.append(_items(record.history.item))
            elif kind == "exit":
                run.exit_code = record.exit.exit_code
        return run
