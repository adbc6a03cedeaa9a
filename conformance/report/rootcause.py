"""Root causes: failed and blocked requirements grouped by what the target did, so one
bug reads as one finding however many requirements it trips. Each verdict carries its
root cause, read from its exchanges when it was made (conformance/kit/evidence.py): the
``key`` that groups, the kind, and the target's answer in words. A group also names the
request features its breaking requests have in common that no request the target
accepted carried (a UUID-string taskId, say): the likely trigger. Its ``label`` says the
same in words, from the kind's meaning (``failures.KINDS``) and the answer itself."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from conformance.failures import KINDS, NOT_THE_TARGET
from conformance.report.words import clipped

_RUNNER_NOTE = re.compile(r"\s*\((?:set by the runner|the default[^)]*)\)$")
ANSWER_WORDS = 160  # characters of the answer or message a label quotes, cut after a word
# the causes of a blocked verdict that are no failure kind, in words (never the key itself)
CAUSES = {
    **NOT_THE_TARGET,
    "blocked": "a set-up step the requirement needs was refused",
    "refusal_cause": "every refusal the requirement met was about something other than what it tests "
                     "(the caller, a quota), so it judged nothing",
    "kit": "the kit could not send a request the requirement needs",
    "control": "the control interface the config names gave no usable answer",
    "quota": "a quota this run spent itself refused what the requirement needed",
}


def _clip(text: str, limit: int = ANSWER_WORDS) -> str:
    return clipped(text, limit)


def signature(verdict: Any) -> str:
    """One line naming the cause of a failed or blocked verdict."""
    return str(verdict.root.key) if verdict.root else f"{kind_of(verdict)}: {verdict.message[:80]}"


def kind_of(verdict: Any) -> str:
    """The failure kind a verdict's signature is built from (a blocked verdict's: its cause)."""
    if verdict.root:
        return str(verdict.root.kind)
    return str(verdict.failures[-1].kind if verdict.failures else verdict.cause or verdict.status)


def meaning(kind: str) -> str:
    """The kind's one-line meaning from ``KINDS`` (a blocked verdict's cause from ``CAUSES``),
    as the start of a sentence; a kind neither names reads as what it did to the row, never
    as the key itself."""
    words = (_RUNNER_NOTE.sub("", KINDS[kind]) if kind in KINDS else CAUSES.get(kind)
             or "the requirement could not be run to a verdict")
    return words[:1].upper() + words[1:]


def label(verdict: Any) -> str:
    """A sentence naming what broke: the kind's meaning, then what the target answered."""
    kind = kind_of(verdict)
    head = meaning(kind)
    root = verdict.root
    if root is None or not (root.answer or root.no_answer or root.trigger):
        return f"{head}: {_clip(verdict.message)}" if verdict.message else head
    if not root.answer:
        why = f" ({_clip(root.no_answer)})" if root.no_answer else ""
        return f"{head}{why}" if kind == "no_answer" else f"{head}: the target sent no answer{why}"
    if " with " in root.answer:
        return f"{head}: the target answered {root.answer}"
    return f"{head} (the target answered {root.answer})"


def in_common(failing: list[set[str]], accepted: set[str], most: int = 3) -> list[str]:
    """Features every failing request carries that no accepted request did, most
    specific (deepest) first."""
    if len(failing) < 2:
        return []
    found = set.intersection(*failing) - accepted
    return sorted(found, key=lambda f: (-f.count(".") - f.count("[]"), f))[:most]


def group_label(members: list[Any]) -> str:
    """The label of a group: its most common kind (failed members first, then blocked),
    told with the answer of the first member of that kind."""
    failed = [r for r in members if r.verdict.status == "failed"] or members
    kinds = Counter(kind_of(r.verdict) for r in failed)
    top = kinds.most_common(1)[0][0]
    return label(next(r.verdict for r in failed if kind_of(r.verdict) == top))


def group(results: list[Any], several: bool = False) -> list[dict[str, Any]]:
    """Failed and blocked rows by signature, largest group first, each with the request
    features its members have in common (see ``in_common``); with ``several`` bindings in
    the run a row is named ``ID[binding]``, and ``bindings`` lists those its group met."""
    groups: dict[str, list[Any]] = {}
    for r in results:
        if r.verdict.status in ("failed", "blocked"):
            groups.setdefault(signature(r.verdict), []).append(r)
    accepted: set[str] = set()
    for r in results:
        accepted |= r.verdict.features
    out = []
    for sig, members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        failing = [set(r.verdict.root.trigger) for r in members if r.verdict.root and r.verdict.root.trigger]
        names = [f"{r.requirement.id}[{r.binding}]" if several and getattr(r, "binding", None)
                 else r.requirement.id for r in members]
        out.append({"signature": sig, "label": group_label(members), "count": len(members),
                    "requirements": names,
                    **({"bindings": sorted({str(r.binding) for r in members})} if several else {}),
                    "request_in_common": in_common(failing, accepted)})
    return out
