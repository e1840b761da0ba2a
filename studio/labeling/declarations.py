"""Labelers from their stored declarations (``{"kind", "atom", "config"}``, as the workspace and
an audit run keep them): every kind of labeler, so this module sits above them all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .labelers import FieldLabeler, LabelerConfigError, Labeling, RegexLabeler

# The settings each kind of labeler accepts.
LABELER_SETTINGS = {"field": {"path", "op", "value"},
                    "regex": {"path", "pattern", "flags"},
                    "llm": {"description", "fields", "model", "batch_size"}}


def make_labeler(kind: str, atom: str, config: Mapping, llm_client=None):
    """Build a labeler from its stored declaration; bad settings raise LabelerConfigError.

    ``llm_client`` (a ``ChatClient`` or a function returning one) serves an ``llm`` labeler;
    without it the labeler uses the environment's endpoint when it first labels something, so
    declaring one never needs the endpoint."""
    if not isinstance(atom, str) or not atom.strip():
        raise LabelerConfigError("an atom name is required", "atom")
    if not isinstance(config, Mapping):
        raise LabelerConfigError("must be an object", "config")
    if kind not in LABELER_SETTINGS:
        raise LabelerConfigError(f"unknown kind {kind!r}; kinds are field, regex and llm",
                                 "kind")
    extra = sorted(set(config) - LABELER_SETTINGS[kind])
    if extra:
        raise LabelerConfigError(f"unknown settings {', '.join(extra)} for a {kind} labeler",
                                 "config")
    if kind == "field":
        if "value" not in config:
            raise LabelerConfigError("a value to compare with is required", "value")
        return FieldLabeler(atom.strip(), config.get("path"), config.get("op", "=="),
                            config["value"])
    if kind == "llm":
        # Imported on first use: the chat client's HTTP stack is not loaded by the processes
        # (audit workers, the arrival child) whose workspaces declare no LLM labeler.
        from .llm_labeler import LLMLabeler

        return LLMLabeler(atom.strip(), config.get("description"), config.get("fields"),
                          config.get("model"), config.get("batch_size"), client=llm_client)
    return RegexLabeler(atom.strip(), config.get("path"), config.get("pattern"),
                        config.get("flags", ""))


def labeling_from_snapshot(snapshot: Iterable[Mapping]) -> Labeling:
    """The labeling of a workspace's labelers as stored plain data (``{"kind", "atom",
    "config"}`` each, as an audit run keeps them)."""
    return Labeling([make_labeler(d["kind"], d["atom"], d["config"]) for d in snapshot])
