"""Inspect AI evaluation logs: the ``.eval`` archive and the ``.json`` document.

Each sample is a session ``inspect/<task>/<sample id>/e<epoch>``; its assistant messages become
events as for chat transcripts (``chat``), with a final answer as ``{"text": ...}``.  ``data``
holds the source, the log's name, the model, the task, the sample's id, epoch and target, its
scores ``{scorer: value}``, and per message ``role`` and ``stop_reason`` (from the model call
that produced the message).

A ``.eval`` file is a zip archive (``header.json``, ``samples/<id>_epoch_<n>.json``; members
compressed with zstd or deflate) read one sample at a time; a ``.json`` log is streamed one
sample at a time.  Errors name the sample by its line in a ``.json`` log, by its position in an
``.eval`` archive, and the faulty part by a JSON pointer.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from .base import (
    MAX_LINE_BYTES,
    MAX_SESSION_LENGTH,
    LineError,
    OptionsError,
    Prefixed,
    json_kind,
    loads,
    parse_timestamp,
)
from .chat import Transcript
from .jsonstream import DocumentError, JsonStream

OPTIONS: frozenset[str] = frozenset()
ZSTD = 93  # zip compression method of zstd, which the zipfile module cannot read
ATTACHMENT = "attachment://"


def check_options(options: dict | None) -> None:
    if options:
        raise OptionsError("Inspect logs take no options", field=f"options.{min(options)}")


def parse_inspect(file: BinaryIO, options: dict | None = None,
                  name: str = "") -> Iterator[dict | LineError]:
    check_options(options)
    head = file.read(4)
    if head.startswith(b"PK"):
        if not hasattr(file, "seek"):
            raise OptionsError("an .eval archive must be read from a seekable file")
        file.seek(0)
        yield from _archive(file, name)
    else:
        yield from _document(Prefixed(head, file), name)


# -- one sample ---------------------------------------------------------------------------------

def _message_info(sample: dict):
    """(timestamp, stop_reason) of each assistant message, from the model calls that made it."""
    found: dict[str, tuple[str | None, str | None]] = {}
    events = sample.get("events")
    for event in events if isinstance(events, list) else ():
        if not isinstance(event, dict) or event.get("event") != "model":
            continue
        output = event.get("output")
        choices = output.get("choices") if isinstance(output, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            continue
        message = choices[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            when = event.get("completed") or event.get("timestamp")
            found[message["id"]] = (when if isinstance(when, str) else None,
                                    choices[0].get("stop_reason"))
    output = sample.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            found.setdefault(message["id"], (None, choices[0].get("stop_reason")))

    def info(message: dict) -> tuple[str | None, str | None]:
        key = message.get("id")
        when, reason = found.get(key, (None, None)) if isinstance(key, str) else (None, None)
        return _timestamp(when), reason if isinstance(reason, str) else None

    return info


def _timestamp(value: str | None) -> str | None:
    stamp, problem = parse_timestamp(value)
    return None if problem else stamp


def _sample_items(sample: Any, header: dict, name: str, line: int,
                  pointer: str) -> list[dict | LineError]:
    if not isinstance(sample, dict):
        return [LineError(line, f"a sample must be an object, got {json_kind(sample)}", pointer)]
    sample_id = sample.get("id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or sample_id == "":
        return [LineError(line, "the sample has no id", f"{pointer}/id")]
    messages = sample.get("messages")
    if not isinstance(messages, list):
        return [LineError(line, "the sample has no messages", f"{pointer}/messages")]
    task = header.get("task") or "unknown"
    epoch = sample.get("epoch")
    session = f"inspect/{task}/{sample_id}" + (f"/e{epoch}" if epoch is not None else "")
    if len(session) > MAX_SESSION_LENGTH:
        return [LineError(line, f"the session name {session[:60]!r}... is longer than "
                                f"{MAX_SESSION_LENGTH} characters", pointer)]
    scores = sample.get("scores")
    data = {"source": "inspect_ai", "log": name, "model": header.get("model"), "task": task,
            "sample_id": sample_id, "epoch": epoch, "target": sample.get("target"),
            "score": ({scorer: (score.get("value") if isinstance(score, dict) else score)
                       for scorer, score in scores.items()} if isinstance(scores, dict) else None)}
    attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}

    def resolve(text: str) -> str:
        # Inspect moves long content out of messages into the sample's attachments.
        if text.startswith(ATTACHMENT):
            stored = attachments.get(text[len(ATTACHMENT):])
            if isinstance(stored, str):
                return stored
        return text

    transcript = Transcript(session, line=line, pointer=pointer, data=data,
                            text_output=lambda text: {"text": text},
                            message_info=_message_info(sample), resolve=resolve)
    for index, message in enumerate(messages):
        transcript.add(index, message)
    return transcript.finish()


def _header(value: Any) -> dict:
    """Task and model from a log's ``eval`` record."""
    if not isinstance(value, dict):
        return {}
    return {"task": value.get("task") if isinstance(value.get("task"), str) else None,
            "model": value.get("model") if isinstance(value.get("model"), str) else None}


# -- the .json document -------------------------------------------------------------------------

def _document(file, name: str) -> Iterator[dict | LineError]:
    stream = JsonStream(file)
    header: dict = {}
    samples = 0
    try:
        for key in stream.members():
            if key == "eval":
                header = _header(stream.take())
            elif key == "samples":
                for index, (line, sample) in enumerate(stream.elements()):
                    samples += 1
                    yield from _sample_items(sample, header, name, line, f"/samples/{index}")
    except DocumentError as exc:
        yield LineError(exc.line, exc.reason)
        return
    if not samples:
        yield LineError(stream.line, "the log holds no samples (was it written with "
                                     "log_samples=False, or is it not an Inspect log?)")


# -- the .eval archive --------------------------------------------------------------------------

def _member_bytes(archive: zipfile.ZipFile, file: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    """A member's content, never more than MAX_LINE_BYTES of it (a zip bomb is refused)."""
    if info.file_size > MAX_LINE_BYTES:
        raise ValueError(f"it is larger than {MAX_LINE_BYTES // (1024 * 1024)} MiB; not read")
    if info.compress_type != ZSTD:
        try:
            with archive.open(info) as member:
                data = member.read(MAX_LINE_BYTES + 1)
        except Exception as exc:  # noqa: BLE001 - zip, zlib, bz2, lzma, encryption: all unreadable
            raise ValueError(f"it cannot be read ({exc})") from None
    else:
        import zstandard  # only .eval archives need it

        file.seek(info.header_offset)
        local = file.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise ValueError("its local header is damaged")
        name_length = int.from_bytes(local[26:28], "little")
        extra_length = int.from_bytes(local[28:30], "little")
        file.seek(info.header_offset + 30 + name_length + extra_length)
        compressed = file.read(info.compress_size)
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(compressed,
                                                                read_across_frames=True)
            data = reader.read(MAX_LINE_BYTES + 1)
        except zstandard.ZstdError as exc:
            raise ValueError(f"it cannot be decompressed ({exc})") from None
    if len(data) > MAX_LINE_BYTES:
        raise ValueError(f"it is larger than {MAX_LINE_BYTES // (1024 * 1024)} MiB; not read")
    return data


def _member_json(archive, file, info) -> Any:
    data = _member_bytes(archive, file, info)
    try:
        return loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    except ValueError as exc:
        raise ValueError(f"it is not valid JSON ({getattr(exc, 'msg', exc)})") from None
    except RecursionError:
        raise ValueError("it is not valid JSON (nested too deeply)") from None


def _archive(file: BinaryIO, name: str) -> Iterator[dict | LineError]:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        yield LineError(0, f"not an Inspect .eval archive (not a readable zip file: {exc})")
        return
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        header: dict = {}
        for source in ("header.json", "_journal/start.json"):  # start.json: a log still running
            if source in members:
                try:
                    header = _header(_member_json(archive, file, members[source]).get("eval"))
                except (ValueError, AttributeError) as exc:
                    yield LineError(0, f"{source}: {exc}", source)
                break
        samples = [info for info in archive.infolist()
                   if info.filename.startswith("samples/") and info.filename.endswith(".json")]
        if not samples:
            yield LineError(0, "the archive holds no samples (samples/*.json)")
        for position, info in enumerate(samples, start=1):
            try:
                sample = _member_json(archive, file, info)
            except ValueError as exc:
                yield LineError(position, f"{info.filename}: {exc}", info.filename)
                continue
            yield from _sample_items(sample, header, name, position, f"{info.filename}#")
