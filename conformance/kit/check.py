"""The check API: what a check function gets (``CheckContext``, over the run's shared
``RunContext``) and the exceptions that end it with a verdict other than passed
(``CheckFailed``, ``Untested``, ``Blocked``, ``NotApplicable``), and ``ProtocolMismatch``
for a target that speaks another protocol. Protocol code imports this module, never the
runner."""

from __future__ import annotations

import ast
import fnmatch
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, reproduce_failure, seed, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from conformance.budgets import Budget
from conformance.failures import DEFAULT_KIND, Failure, check_kind
from conformance.kit.evidence import answer_of, blamed, breaking
from conformance.kit.live import REASONS, Identities, PutBack, QuotaBook, quota_refusal
from conformance.ledger import LEDGER
from conformance.model import Declared, Exchange, Profile, Requirement
from conformance.transport.binding import Binding, make_binding
from conformance.transport.credentials import CredentialUnavailable, describe_way, secrets_of
from conformance.transport.http import HttpReply, HttpTransport, RunStopped, TransportFailure


def _draws_from_strategies_alone() -> None:
    """Hypothesis also draws values from constants it finds in the source of "local"
    modules: the kit's own code when it is installed editable, none when it is a wheel. The
    same seed would send other exchanges by how the kit was installed, the kit's source says
    nothing about a target, and reading it costs every process seconds. Its own global
    constants stay; the source scan goes (a hypothesis without the hook is left alone)."""
    from hypothesis.internal.conjecture import providers

    if callable(getattr(providers, "_get_local_constants", None)):
        empty = providers._local_constants
        providers._get_local_constants = lambda: empty


_draws_from_strategies_alone()


class CheckFailed(AssertionError):
    """The target broke the requirement. ``kind`` is one of ``KINDS``
    (conformance/failures.py; an unknown kind raises ValueError here, when the
    check is written wrong, not when the target is); ``statement`` optionally
    names the spec statement broken; ``subcheck`` is filled in by ``ctx.subcheck``;
    ``typed`` holds what the check knew of the expected and actual answer
    (``expected_code``, ``actual_code``, ``expected_status``, ``actual_status``)."""

    def __init__(self, message: str, kind: str = DEFAULT_KIND, statement: str | None = None,
                 subcheck: str | None = None, **typed: Any) -> None:
        super().__init__(message)
        self.kind = check_kind(kind)
        self.statement = statement
        self.subcheck = subcheck
        unknown = set(typed) - TYPED
        if unknown:
            raise ValueError(f"unknown typed fields {sorted(unknown)} (one of {sorted(TYPED)})")
        self.typed = typed

    def failure(self, log: list[Exchange]) -> Failure:
        """This finding as a ``Failure``; what it does not say of the actual answer is read
        from the last exchange of ``log`` that got one."""
        return typed_failure(Failure(self.kind, _clean_message(self), self.statement, self.subcheck,
                                     **self.typed), log)


TYPED = frozenset({"expected_code", "actual_code", "expected_status", "actual_status"})


def typed_failure(failure: Failure, log: list[Exchange]) -> Failure:
    """``failure`` with its actual status and code read from the exchange that broke it
    (the last one answered in ``log``) where the check did not give them."""
    last = breaking(log)
    if last is None or (failure.actual_status is not None and failure.actual_code is not None):
        return failure
    status, code = answer_of(last.response)
    if failure.actual_status is None:
        failure.actual_status = status
    if failure.actual_code is None:
        failure.actual_code = code
    return failure


class Untested(Exception):
    """The requirement cannot be tested against this target with what was given;
    ``reason`` is one of ``conformance.kit.live.REASONS`` (reports count them apart)."""

    def __init__(self, message: str, reason: str = "other") -> None:
        super().__init__(message)
        if reason not in REASONS:
            raise ValueError(f"untested reason {reason!r} is not one of {sorted(REASONS)}")
        self.reason = reason


class Blocked(Exception):  # noqa: N818 - a verdict, like Untested
    """The check could not set up what it tests: the target refused a set-up step.
    The verdict is ``blocked`` by that finding (not a failure of this requirement)."""

    def __init__(self, message: str, kind: str = DEFAULT_KIND) -> None:
        super().__init__(message)
        self.kind = kind  # of the finding that blocked it: root causes group by it


class NotApplicable(Exception):
    """The requirement does not apply to this target or binding (reported skipped);
    ``declared`` when a declaration made it so: the target's own (``require_declared``) or
    the config's ``declared:``. The verdict carries it, so a report can name the declaration."""

    def __init__(self, message: str = "", declared: Declared | None = None) -> None:
        super().__init__(message)
        self.declared = declared


class VerdictDecided(BaseException):  # noqa: N818 - a signal to stop, like RunAborted
    """Stops a hypothesis test at once: a verdict other than passed or failed was decided
    inside one of its examples (``CheckContext.verdict_ends_example``). A BaseException, so
    that hypothesis neither shrinks nor replays it, and no check's ``except Exception``
    swallows it."""

    def __init__(self, verdict: Exception) -> None:
        super().__init__(str(verdict))
        self.verdict = verdict


class ProtocolMismatch(Exception):
    """The target answers, but not in the protocol of the profile (exit 3)."""


def by_declaration(declared: Declared, why: str = "") -> str:
    """The message of a row that a declaration makes not applicable: the target's own, or
    the config's ``declared:``."""
    said = f"(declared: {declared.said})" if declared.by == "config" else f"by declaration: {declared.said}"
    return f"not applicable {said}" + (f" ({why})" if why else "")


def declared_away(profile: Profile, feature: str) -> Declared:
    """The config's ``declared:`` naming ``feature`` (an optional feature of the profile)."""
    where = profile.optional.get(feature)
    return Declared(feature, False, f"the deployment does not offer {feature}, which the spec makes optional"
                    + (f" at {where}" if where else ""), "config")


def not_served(feature: str, answer: str) -> str:
    return (f"the target answers that it does not serve {feature}, which the spec makes optional: {answer} "
            f"(declare it in the config's declared: to make this row not applicable)")


@dataclass
class RunContext:
    """Everything shared by the requirements of one run."""

    profile: Profile
    http: HttpTransport
    budget: Budget
    seed: int
    credentials: dict[str, Any] = field(default_factory=dict)
    control_path: str | None = None  # path prefix (or URL) of the control interface
    database: ExampleDatabase | None = None
    unreachable: str | None = None
    binding: str | None = None  # which of the profile's bindings the run speaks
    # ids of a live target's seeded world (config `world:`)
    world: dict[str, Any] = field(default_factory=dict)
    # messages that drive the target to a named outcome (config `scenarios:`, the profile's
    # `scenarios:` names the outcomes): where the agent is not the kit's to script
    scenarios: dict[str, Any] = field(default_factory=dict)
    declared: frozenset[str] = frozenset()  # optional features the deployment declares it does not offer
    # public keys the run trusts for the target's signatures (config `keys:`): a JWK Set, or
    # key id -> JWK
    keys: dict[str, Any] = field(default_factory=dict)
    shrink: bool = True  # minimise failing examples (off where only whether a check crashes matters)
    reference: Any = None  # the built-in reference's instance, in process (selftest traces what checks read)
    # credentials the target refused before the run (or wanted and was not given), with
    # why: a requirement that would send one is untested (conformance/credentials.py)
    refused: dict[str, str] = field(default_factory=dict)
    # replay what earlier runs saved in the example database before generating (a shared
    # `examples:` database, a fuzz campaign); off, the same seed sends the same exchanges
    reuse_examples: bool = False
    # optional features asked once whether the target serves them (CheckContext.require_served):
    # feature -> None (served) or the target's own answer saying it does not
    served: dict[str, str | None] = field(default_factory=dict)
    # what the target's own declaration says of each optional feature it declares on or off
    # (CheckContext.require_declared), read once per run; and which requirements asked, in
    # order (the selftest gives a later one the reach of the first, which read the declaration)
    declarations: dict[str, Declared] = field(default_factory=dict)
    declaration_askers: dict[str, list[str]] = field(default_factory=dict)
    # a live run does no harm (conformance/kit/live.py): whom it may change for good, what it
    # spent of each quota, and what it could not put back
    identities: Identities = field(default_factory=Identities)
    quotas: QuotaBook = field(default_factory=QuotaBook)
    not_put_back: list[str] = field(default_factory=list)
    # what a protocol keeps from check to check within one run (its live-site baseline, say)
    scratch: dict[str, Any] = field(default_factory=dict)
    # where the target says each binding lives (its path, say), found by the protocol's probe:
    # binding name -> entry keys that replace the profile's
    endpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the webhook receiver's settings (config `receiver:`): the URL targets call, the local port
    receiver: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.http.target

    @property
    def live(self) -> bool:
        """No control interface: the target's state is the operator's, not the run's."""
        return not self.control_path


_BLOB = re.compile(r"@reproduce_failure\('([^']+)', (b'[^']*')\)")


class CheckContext:
    """What a check function gets: transports, credentials, control, and helpers
    that run hypothesis with the run's budget and seed."""

    def __init__(self, run: RunContext, requirement: Requirement, reproduce: dict[str, Any] | None = None):
        self.run = run
        self.requirement = requirement
        self.profile = run.profile
        self.budget = run.budget
        self.http = run.http
        self._reproduce = reproduce
        self._calls = 0
        self.failed_call: int | None = None
        self.blob: tuple[str, str] | None = None
        self._binding: Binding | None = None
        self.machine_stats: Counter[str] = Counter()  # rules and transitions a state machine reached
        # sub-checks: what failed (with the exchanges logged then: a later for_all
        # clears the log, the case must still hold them), where we are, and whether
        # a hypothesis body is running (> 0), where nothing may be swallowed
        self.subcheck_failures: list[Failure] = []
        self.subcheck_exchanges: list[Exchange] = []
        self._subchecks_entered: frozenset[str] = frozenset()
        self._subcheck_path: tuple[str, ...] = ()
        self._hypothesis_depth = 0
        self._put_back = PutBack()
        self.scratch: dict[str, Any] = {}  # what a protocol keeps for this requirement only
        self.spent: defaultdict[str, Counter[str]] = defaultdict(Counter)
        # refusals for a quota set aside (the run spent it: blocked, not failed)
        self.quota_refusals: list[str] = []
        # expectations weighed outside set-up steps: a check that weighed none passes nothing
        # (the runner makes it untested, reason ``unjudged``)
        self.judged = 0
        self._setting_up = 0

    @property
    def binding_name(self) -> str | None:
        return self.run.binding

    @property
    def binding(self) -> Any:
        """The run's binding (transport/binding.py): ``call(operation, params, caller=...)``."""
        if self._binding is None:
            name = self.run.binding
            if name is None:
                raise NotApplicable(f"profile {self.profile.name} declares no bindings")
            self._binding = self.binding_named(name)
        return self._binding

    def binding_named(self, name: str) -> Any:
        """Another of the profile's bindings, for a requirement about that surface
        whatever the run speaks (an action only one binding carries, say)."""
        entry = {**self.profile.settings["bindings"][name], **self.run.endpoints.get(name, {})}
        other = make_binding(name, entry, self.http, self.token)
        other.on_unauthenticated = self._needs_token
        other.before_call = self._lasting_operation
        return other

    def _lasting_operation(self, operation: str, label: str | None) -> None:
        """The profile's ``lasting:`` block names operations that do something lasting to
        their caller (close_mailbox, say): guarded as ``lasting`` is."""
        what = (self.profile.settings.get("lasting") or {}).get(operation)
        if what and label:
            self.lasting(label, str(what))

    def _needs_token(self, label: str) -> None:
        """The target answered 401 to a call that carried no credential: the one the binding
        sends (a bearer token, or what the target's declaration asks for) was not given."""
        ways = (self.run.endpoints.get(self.run.binding or "") or {}).get("auth")
        if isinstance(ways, list) and ways:
            wanted = " or ".join(" and ".join(describe_way(w) for w in alternative) for alternative in ways)
            self.run.refused.setdefault(label, f"not given, and the target requires credentials (HTTP 401 "
                                               f"without them; it asks for {wanted})")
            raise Untested(f"the target requires credentials (HTTP 401 without them; it asks for {wanted}): "
                           f"give credentials.{label}", "credential")
        self.run.refused.setdefault(label, "not given, and the target requires a bearer token "
                                           "(HTTP 401 without one)")
        raise Untested(f"the target requires a bearer token: give --token or credentials.{label}",
                       "credential")

    def _not_refused(self, label: str) -> None:
        """A credential the target refused, or that holds nothing the target asks for, is never
        sent to be judged."""
        why = self.run.refused.get(label)
        if why is not None:
            raise Untested(f"credential {label!r} {why}: not judged (give a credential the target accepts)",
                           "credential")

    def token(self, label: str, required: bool = True) -> str | None:
        """The bearer token of a credential (a text, a mapping's ``token``, or the one its OAuth2
        client credentials fetch); "" for a credential given without one (an API key, Basic, a
        client certificate: the bindings send it as the target asks). A required one that was
        not given makes the requirement untested, and so does one the target refused before
        the run, or whose token could not be fetched."""
        self._not_refused(label)
        if not self.run.credentials.get(label):
            if required:
                raise Untested(f"no credential {label!r} given (set credentials.{label} in --config)",
                               "credential")
            return None
        store = self.http.credentials
        try:
            bearer = store.bearer(label)
        except CredentialUnavailable as exc:
            self.run.refused.setdefault(label, str(exc))
            raise Untested(f"credential {label!r}: {exc}", "credential") from None
        if bearer:
            return bearer
        held = store.get(label)
        if held is not None and held.given:
            return ""
        if required:
            raise Untested(f"no credential {label!r} given (set credentials.{label} in --config)",
                           "credential")
        return None

    # -- what the target offers --------------------------------------------------
    def credential(self, label: str) -> Any:
        self._not_refused(label)
        value = self.run.credentials.get(label)
        if not value:
            raise Untested(f"no credential {label!r} given (set credentials.{label} in --config)",
                           "credential")
        return value

    def limit(self, name: str) -> int:
        """A limit of the profile (its ``limits:`` block), in the unit its name says."""
        if name not in self.profile.limits:
            raise ValueError(f"{self.profile.name} has no limit {name!r} (known: "
                             f"{', '.join(sorted(self.profile.limits))})")
        return int(self.profile.limits[name].value)

    def require_served(self, feature: str, probe: Callable[[], str | None]) -> None:
        """Once per run, ``probe()`` asks the target whether it serves the optional
        ``feature`` (the profile's ``optional:`` block): None when it does, else the
        target's answer saying it does not (the document's own "unsupported" answer).
        When it does not, this requirement and every later one of that feature is
        untested with that answer, whatever order they run in: a part the target
        declines is never failed or blocked in some rows and untested in others."""
        if feature not in self.run.profile.optional:
            raise ValueError(f"{feature!r} is not an optional feature of {self.run.profile.name}")
        if feature not in self.run.served:
            self.run.served[feature] = probe()
        answer = self.run.served[feature]
        if answer is not None:
            raise Untested(not_served(feature, answer), "optional")

    def require_declared(self, feature: str, read: Callable[[], tuple[bool, str]], *, offered: bool = True,
                         why: str = "") -> Declared:
        """What the target's own declaration says of the optional ``feature`` (an agent
        card's capability or security schemes, an MCP server's initialize answer): once per
        run, ``read()`` gives whether it declares the feature offered and the declaration in
        words ("the agent card declares no securitySchemes"). A row about the feature is not
        applicable where the declaration says it is off; a row about what a feature declared
        off calls for (``offered=False``: its refusals) where it says it is on. Every later
        row of that feature gets the same answer, whatever order they run in; the verdict
        carries the declaration, and ``why`` adds the row's own words. The feature declared
        away in the config's ``declared:`` is off for the rows about it.

        Not ``require_served`` (the target, asked, answers that it does not serve an
        optional part: untested with its answer) nor the config's ``declared:`` (the user
        declares a feature away): here the target says of itself that it does not offer
        the feature, so nothing about it can be asked of it. A feature declared and then not
        served is no concern of this: its rows run, and fail."""
        if offered and feature in self.run.declared:
            away = declared_away(self.profile, feature)
            raise NotApplicable(by_declaration(away, why), away)
        found = self.run.declarations.get(feature)
        if found is None:
            on, said = read()
            found = self.run.declarations[feature] = Declared(feature, bool(on), said)
        self.run.declaration_askers.setdefault(feature, []).append(self.requirement.id)
        if found.offered != offered:
            raise NotApplicable(by_declaration(found, why), found)
        return found

    def has_credential(self, label: str) -> bool:
        """Given, not refused by the target before the run, and holding what the target asks for."""
        return bool(self.run.credentials.get(label)) and label not in self.run.refused

    def control(self, action: str, **payload: Any) -> HttpReply:
        """Drive what the wire cannot (see DESIGN.md, control interface)."""
        if not self.run.control_path:
            self.needs_control(f"control action {action!r}")
        try:
            reply = self.http.request("POST", f"{self.run.control_path}/{action}", json_body=payload)
        except TransportFailure as exc:  # the control interface's doing (or the kit's), never the target's
            raise Blocked(f"the control interface ({self.run.control_path}) gave no usable answer to "
                          f"{action!r}: {_clean_message(exc)}", "control") from None
        if reply.status >= 500:
            raise Blocked(f"the control interface ({self.run.control_path}) failed on {action!r}: "
                          f"HTTP {reply.status} {reply.text[:100]}", "control")
        if reply.status >= 400:
            raise Untested(f"control action {action!r} refused: HTTP {reply.status} {reply.text[:100]}",
                           "control")
        return reply

    @staticmethod
    def needs_control(why: str = "") -> None:
        """Untested: what the requirement needs (``why``) only the control interface gives."""
        raise Untested("needs the target's control interface" + (f": {why}" if why else "") +
                       " (set control: in --config)", "control")

    # -- a live run does no harm (conformance/kit/live.py) -------------------------------
    def lasting(self, label: str, what: str, met: bool = False) -> None:
        """Before doing something lasting (``what``: "closing the mailbox") to the identity
        ``label``: without control it runs only on an identity the run created or the
        config marks disposable, else the requirement is untested (reason ``harm``). The
        requirement must declare that it does something lasting (``Requirement.lasting``),
        unless the check only ``met`` it on this target (the operator's own connection, say,
        which the reference's world does not have)."""
        if not (self.requirement.lasting or met):
            raise ValueError(f"{self.requirement.id} {what} of {label!r} but declares nothing lasting "
                             "(Requirement.lasting)")
        if self.run.live and not self.run.identities.may_change(label):
            raise Untested(f"would harm a configured identity: {what} of {label!r} cannot be undone "
                           f"over the wire (mark credentials.{label}.disposable: true, or give control)",
                           "harm")

    def adopt(self, label: str, credential: Any) -> None:
        """An identity the run created over the protocol (a fresh mailbox, say): usable as
        ``label`` from now on, its secrets redacted, and the run's to change for good."""
        self.run.credentials[label] = credential
        self.run.identities.created.add(label)
        for name, secret in secrets_of({label: credential}).items():
            self.http.redact.add(name, secret)

    def put_back(self, what: str, undo: Callable[[], Any]) -> None:
        """A reversible change made to a configured identity (``what``), or what the
        requirement made on the target, undone by ``undo()`` when the requirement ends,
        whatever its verdict; an undo that raises, or returns False or a text (why), is
        reported as not put back."""
        self._put_back.add(what, undo)

    def spend(self, quota: str, who: str, count: int = 1) -> None:
        """Before a call that spends ``count`` of ``quota`` (a name of the profile's
        ``quotas:``) for ``who``: without control, untested (reason ``quota``) when this
        run's own spending leaves no room; the spending is recorded either way."""
        book = self.run.quotas
        if quota not in book.limits:
            raise ValueError(f"{quota!r} is not a quota of {self.profile.name} (its quotas: block)")
        if self.run.live and count > book.room(quota, who) and not self.about_quota(quota):
            raise Untested(book.short({quota: {who: count}}) or quota, "quota")
        book.spend(quota, who, count)
        self.spent[quota][who] += count

    def refund(self, quota: str, who: str, count: int = 1, *, record: bool = True) -> None:
        """Give back what ``spend`` counted: a call the target refused spent nothing
        (``record``: this requirement's measured use drops too), or a cap's unit was freed
        (a request answered, a grant revoked: ``record=False`` keeps the measured use)."""
        self.run.quotas.give_back(quota, who, count)
        if record:
            self.spent[quota][who] = max(0, self.spent[quota][who] - count)

    def about_quota(self, quota: str) -> bool:
        """Whether this requirement is about ``quota`` (its ``quotas:`` rows): its refusals are
        its verdict."""
        rows = (self.profile.settings.get("quotas") or {}).get(quota, {}).get("rows") or []
        return any(fnmatch.fnmatchcase(self.requirement.id, pattern) for pattern in rows)

    # -- verdict helpers ----------------------------------------------------------
    def fail(self, message: str, kind: str = DEFAULT_KIND, statement: str | None = None,
             **typed: Any) -> None:
        """The target broke the requirement: ``kind`` from conformance/failures.py
        ``KINDS``, ``statement`` the spec statement it breaks (optional), ``typed`` what the
        check knows of the expected and actual answer (``expected_code=...``, see CheckFailed)."""
        raise CheckFailed(message, kind, statement, **typed)

    def expect(self, condition: Any, message: str, kind: str = DEFAULT_KIND, statement: str | None = None,
               **typed: Any) -> None:
        """The target's answer is weighed: ``condition`` must hold, else the requirement is
        broken (``message``, ``kind``, ``statement`` and ``typed`` as ``fail`` takes them). Only
        what a check expects outside its set-up steps (``setup``) counts as judging: a
        requirement whose check judged nothing is untested, never passed."""
        check_kind(kind)  # a wrong kind is the check's defect: raise even when the condition holds
        if not self._setting_up:
            self.judged += 1
        if not condition:
            raise CheckFailed(message, kind, statement, **typed)

    def _record(self, failure: Failure) -> None:
        if self.http.stopped:  # found while the run is stopping: no finding
            raise RunStopped(self.http.stopped)
        spent = self.spent_quota()
        if spent:
            self.quota_refusals.append(spent)
        else:
            self.subcheck_failures.append(failure)
        self.keep_evidence()

    def spent_quota(self) -> str | None:
        """When the last answer refused for a quota and this requirement is about none:
        why it is blocked (a quota refusal is never this requirement's failure)."""
        quotas = self.profile.settings.get("quotas") or {}
        last = self.http.log[-1] if self.http.log else None
        if (last is None or any(self.about_quota(q) for q in quotas)
            or not quota_refusal(self.profile, last.response)):
            return None
        status, said = blamed(last.response)
        spent = self.run.quotas.describe(
            said=f"{said} {last.response.get('body', '') if last.response else ''}")
        return (f"blocked by a quota: the target answered {status} {said}".strip() +
                (f"; this run had spent {spent}" if spent else "")
                + " (a quota refusal is never this requirement's failure)")

    @property
    def subchecks_entered(self) -> int:
        """How many distinct sub-checks the check has entered (outside hypothesis)."""
        return len(self._subchecks_entered)

    @contextmanager
    def subcheck(self, name: str) -> Iterator[None]:
        """One of several independent things a requirement checks (auth over seven
        methods: one sub-check per method). A ``CheckFailed`` raised inside is
        recorded with the sub-check's name and the check goes on; at the end
        ``execute`` fails the requirement listing every failed sub-check. A
        ``TransportFailure`` inside is recorded the same way (kind ``no_answer``).

        What is never swallowed: ``Untested``, ``NotApplicable``, ``RunAborted``
        and any other exception (they end the check as they would outside); and
        nothing at all inside a ``for_all`` / ``run_machine`` body, where
        hypothesis must see the failure to shrink it and save its reproduction
        blob: there the failure is only labelled with the sub-check's name and
        re-raised. A sub-check around a ``for_all`` call (not inside its body)
        records as usual. Nested sub-checks are named "outer > inner"."""
        path = (*self._subcheck_path, name)
        label = " > ".join(path)
        in_hypothesis = self._hypothesis_depth > 0
        if not in_hypothesis:
            self._subchecks_entered = self._subchecks_entered | {label}
        outer = self._subcheck_path
        self._subcheck_path = path
        try:
            yield
        except CheckFailed as exc:
            if exc.subcheck is None:
                exc.subcheck = label
            if in_hypothesis:
                raise
            self._record(exc.failure(self.http.log))
        except TransportFailure as exc:
            if in_hypothesis:
                raise
            if exc.cause != "target":  # the kit's or the control interface's doing: no finding
                raise Blocked(f"{label}: {not_the_target(exc)}", exc.cause) from None
            self._record(typed_failure(Failure("no_answer", _clean_message(exc), None, label), self.http.log))
        finally:
            self._subcheck_path = outer

    @contextmanager
    def setup(self, what: str, by: str = "") -> Iterator[None]:
        """A set-up step (create the task the check is about, say): if the target
        refuses it, the requirement is ``blocked`` by that finding instead of failing
        with it; the finding is reported once, by the requirement ``by`` that is about
        it. The requirement that is about the step itself is not blocked by it."""
        if by == self.requirement.id:
            yield
            return
        self._setting_up += 1
        try:
            yield
        except (CheckFailed, TransportFailure) as exc:
            spent = self.spent_quota()
            if spent:
                raise Blocked(f"set-up failed: {what}: {spent}", "quota") from exc
            owner = f" (the subject of {by})" if by else ""
            if isinstance(exc, TransportFailure) and exc.cause != "target":
                raise Blocked(f"set-up failed: {what}: {not_the_target(exc)}", exc.cause) from exc
            kind = exc.kind if isinstance(exc, CheckFailed) else "no_answer"
            raise Blocked(f"set-up failed: {what}{owner}: {_clean_message(exc)}", kind) from exc
        finally:
            self._setting_up -= 1

    def keep_evidence(self) -> None:
        """Keep the exchanges logged so far in the case should the check fail later:
        an answer the rest of the check judges (a tools listing, say) stays quoted
        after the examples that follow forget theirs."""
        kept = self.subcheck_exchanges
        kept += [e for e in self.http.log if all(e is not k for k in kept)]

    def begin_example(self) -> None:
        """Forget the exchanges of the previous example: a case holds only the last one."""
        self.http.log.clear()

    # -- hypothesis ---------------------------------------------------------------
    @contextmanager
    def verdict_ends_example(self) -> Iterator[None]:
        """Around what a hypothesis example runs (a ``for_all`` body, a machine's steps): an
        Untested, Blocked or NotApplicable raised there decides the verdict, not a failure
        to shrink. Hypothesis would replay the example to shrink it, against a target whose
        state the first run changed (a quota spent, say), and crash when the replay drew
        otherwise, or draw example after example only to reject it; instead it stops at once
        (``VerdictDecided``, which hypothesis does not catch; a machine's teardown still puts
        the target back) and the verdict is raised as it was (``_hypothesis``)."""
        try:
            yield
        except (Untested, Blocked, NotApplicable) as exc:
            if self._hypothesis_depth <= 0:
                raise
            raise VerdictDecided(exc) from None

    @contextmanager
    def _hypothesis(self, call: int) -> Iterator[None]:
        """Running one hypothesis test: its failure captured for the case; a verdict decided
        inside it (``verdict_ends_example``) raised as it was."""
        self._hypothesis_depth += 1
        try:
            yield
        except VerdictDecided as decided:
            raise decided.verdict from None
        except Exception as exc:
            self._capture(exc, call)
            raise
        finally:
            self._hypothesis_depth -= 1

    def settings(self, examples: int | None = None, **extra: Any) -> settings:
        return settings(
            max_examples=examples or self.budget.examples,
            deadline=None,
            database=self.run.database,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            print_blob=True,
            # the explain phase re-sends a failing example ~100 times to a live target
            phases=[p for p in Phase if p is not Phase.explain and (self.run.shrink or p is not Phase.shrink)
                    and (self.run.reuse_examples or p is not Phase.reuse)],
            **extra,
        )

    @property
    def generated(self) -> int:
        """How many hypothesis properties and machines the check has run."""
        return self._calls

    def _digest(self, call: int) -> bytes:
        return f"{self.run.profile.name}:{self.requirement.id}:{call}".encode()

    def _decorate(self, test: Any, call: int) -> Any:
        test._hypothesis_internal_add_digest = self._digest(call)
        rep = self._reproduce
        if rep and rep.get("call") == call:
            test = reproduce_failure(rep["version"], ast.literal_eval(rep["blob"]))(test)
        return seed(self.run.seed)(test)

    def _capture(self, exc: BaseException, call: int) -> None:
        for note in getattr(exc, "__notes__", []) or []:
            match = _BLOB.search(note)
            if match:
                self.blob = (match.group(1), match.group(2))
        self.failed_call = call

    def for_all(self, strategy: st.SearchStrategy[Any], body: Callable[[Any], None],
                examples: int | None = None, batched: st.SearchStrategy[Any] | None = None) -> None:
        """Run ``body`` on generated examples; on failure the minimal example's
        exchanges stay in the log. Where the budget judges a batch of inputs per example
        and the check offers ``batched`` (inputs of ``strategy`` whose costly part is drawn
        once per example: generation/variants.py), a batch is drawn from it; inputs drawn
        one by one gain nothing from a batch but a larger example to keep and shrink."""
        self._calls += 1
        call = self._calls
        batch = self.budget.batch if batched is not None else 1
        one: st.SearchStrategy[Any] = strategy if batched is None or batch == 1 else batched

        # a batch is ``batch`` picks (a drawn list length would be 1 or 2 most of the time),
        # distinct where ``batched`` offers them so; a pick equal to an earlier one of its
        # example is not judged again, and a case holds the exchanges of the failing pick
        @given(one if batch == 1 else st.lists(one, min_size=batch, max_size=batch))
        def prop(example: Any) -> None:
            self.begin_example()
            with LEDGER.charge("judging"), self.verdict_ends_example():
                if batch == 1:
                    body(example)
                    return
                judged: set[str] = set()
                picked: set[int] = set()  # a pick repeated is the same object: no repr again
                for value in example:
                    if id(value) in picked:
                        continue
                    picked.add(id(value))
                    key = repr(value)
                    if key not in judged:
                        judged.add(key)
                        self.http.log.clear()  # independent inputs: a case holds the failing one's
                        body(value)

        # the example database keys a test by its source: every for_all shares this
        # one, so the key names the requirement and the call
        prop.hypothesis.inner_test._hypothesis_internal_add_digest = (  # type: ignore[attr-defined]
            self._digest(call))
        # settings after @seed, which would switch the run's example database off
        test = self.settings(examples)(self._decorate(prop, call))
        with self._hypothesis(call), LEDGER.charge("generation"):  # hypothesis drawing: all but the body
            test()

    def run_machine(self, machine: type[RuleBasedStateMachine]) -> None:
        """Run a stateful test: ``machine(ctx=...)`` makes an example, whose __init__ must
        call ``begin_example`` (``ProfileMachine`` does)."""
        self._calls += 1
        call = self._calls

        def example() -> RuleBasedStateMachine:
            # a factory, not a subclass binding ``ctx``: hypothesis keeps what it works
            # out about a machine class for the life of the process, one entry per class
            return machine(ctx=self)  # type: ignore[call-arg]

        example.__name__ = machine.__name__
        # the engine and its draws; rules charge judging (machine.py)
        with self._hypothesis(call), LEDGER.charge("generation"):
            run_state_machine_as_test(
                self._decorate(example, call),
                settings=self.settings(self.budget.machines, stateful_step_count=self.budget.steps))


def not_the_target(exc: TransportFailure) -> str:
    """A request failure that is not the target's doing, in words that say whose it is."""
    whose = {"kit": "the kit could not send its own request",
             "control": "the control interface the config names gave no usable answer"}[exc.cause]
    return f"{whose} ({_clean_message(exc)}): not a finding about the target"


def _clean_message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.split("\nFalsifying")[0].strip()


