"""`conformance fuzz merge DIR...`: one report for a campaign that ran as shards on many
machines. Each shard wrote its own fuzz.json and cases/; the merge keeps one failure per
requirement, binding and root cause (the case file of the shard that listed it first), adds up
the exchanges, and says whether the shards' seeds were disjoint as ``--shard`` promises. A
failure a shard's baseline listed stays known: only new ones make the exit code 1."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.report.words import clipped
from conformance.run.config import ConfigError


@dataclass
class Merged:
    profile: str = ""
    targets: list[str] = field(default_factory=list)
    shards: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    kit_errors: list[dict[str, Any]] = field(default_factory=list)  # the kit's own, never the target's
    overlapping_seeds: list[int] = field(default_factory=list)

    @property
    def exchanges(self) -> int:
        return sum(int(s.get("exchanges") or 0) for s in self.shards)

    @property
    def new_failures(self) -> list[dict[str, Any]]:
        """The failures no shard's baseline listed."""
        return [f for f in self.failures if not f.get("baseline")]


def read_shard(folder: Path) -> dict[str, Any]:
    """A shard's fuzz.json, or ConfigError saying in one line why it cannot be read."""
    path = folder / "fuzz.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{folder}: no fuzz.json (is it the --report folder of a `conformance fuzz`?)") \
            from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as a campaign's summary: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("failures"), list) or "profile" not in data:
        raise ConfigError(f"{path} is not a campaign's summary (no profile or failures)")
    return data


def merge(folders: list[Path], out: Path) -> Merged:
    """Join the shards in ``folders`` into ``out`` (fuzz.json, report.md, cases/)."""
    merged = Merged()
    seen_seeds: dict[int, str] = {}
    kept: set[tuple[int, tuple[str, str, str]]] = set()
    (out / "cases").mkdir(parents=True, exist_ok=True)
    for folder in folders:
        data = read_shard(folder)
        if merged.profile and data["profile"] != merged.profile:
            raise ConfigError(f"{folder} is a campaign of profile {data['profile']}, the others of "
                              f"{merged.profile}: merge one campaign at a time")
        merged.profile = str(data["profile"])
        if data.get("target") not in merged.targets:
            merged.targets.append(str(data.get("target")))
        shard = str(data.get("shard") or "0/1")
        for worker, drawn in (data.get("seeds") or {}).items():
            for seed in drawn:
                where = f"shard {shard} worker {worker}"
                if seed in seen_seeds and seen_seeds[seed] != where:
                    merged.overlapping_seeds.append(int(seed))
                seen_seeds.setdefault(seed, where)
        merged.shards.append({"folder": str(folder), "shard": shard, "workers": data.get("workers"),
                              "seconds": data.get("seconds"), "exchanges": data.get("exchanges"),
                              "rounds": data.get("rounds"),
                              "replayed_from_shared": data.get("replayed_from_shared"),
                              "unreachable": data.get("unreachable"),
                              "interrupted": data.get("interrupted")})
        kinds = ((merged.failures, data["failures"]), (merged.kit_errors, data.get("kit_errors") or []))
        for into, found in kinds:
            for failure in found:
                key = (str(failure.get("requirement")), str(failure.get("binding")),
                       str(failure.get("signature")))
                found_by = f"shard {shard} worker {failure.get('worker')} round {failure.get('round')}"
                if (id(into), key) in kept:
                    first = next(f for f in into
                                 if (f["requirement"], str(f.get("binding")), f["signature"]) == key)
                    first["also_found_by"].append(found_by)
                    continue
                kept.add((id(into), key))
                case = folder / "cases" / str(failure.get("case"))
                for kept_file in (case, case.with_suffix(".sh")):  # the case and its requests in one paste
                    if kept_file.is_file():
                        shutil.copy2(kept_file, out / "cases" / kept_file.name)
                into.append({**failure, "found_by": found_by, "also_found_by": []})
    write(merged, out)
    return merged


def write(merged: Merged, out: Path) -> None:
    summary = {"profile": merged.profile, "targets": merged.targets, "exchanges": merged.exchanges,
               "shards": merged.shards, "seeds_disjoint": not merged.overlapping_seeds,
               "overlapping_seeds": sorted(set(merged.overlapping_seeds)), "failures": merged.failures,
               "kit_errors": merged.kit_errors}
    (out / "fuzz.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    lines = [f"# Fuzz campaign: {merged.profile} against {', '.join(merged.targets)}", "",
             f"{len(merged.shards)} shard(s), {merged.exchanges} exchanges, {len(merged.failures)} distinct "
             f"failure(s); seeds {'disjoint' if not merged.overlapping_seeds else 'OVERLAPPING'}.", "",
             "| shard | workers | seconds | exchanges | replayed from others | stopped |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {s['shard']} | {s['workers']} | {s['seconds']} | {s['exchanges']} | "
              f"{'' if s.get('replayed_from_shared') is None else s['replayed_from_shared']} | "
              f"{s['unreachable'] or s['interrupted'] or ''} |" for s in merged.shards]
    lines += ["", "| requirement | binding | level | failure | case | found by |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {f['requirement']} | {f.get('binding') or ''} | {f['level']} | "
              f"{'(known: ' + str(f['baseline'].get('reason')) + ') ' if f.get('baseline') else ''}"
              f"{clipped(str(f['message']), 200).replace('|', '/')} | "
              f"cases/{f['case']} | {', '.join([f['found_by'], *f['also_found_by']])} |"
              for f in merged.failures]
    if merged.kit_errors:
        lines += ["", "Internal errors of conformance (bugs of the kit, never findings about the target):",
                  "",
                  "| requirement | error | case | found by |", "|---|---|---|---|"]
        lines += [f"| {f['requirement']} | {clipped(str(f['message']), 200).replace('|', '/')} | "
                  f"cases/{f['case']} | "
                  f"{', '.join([f['found_by'], *f['also_found_by']])} |" for f in merged.kit_errors]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
