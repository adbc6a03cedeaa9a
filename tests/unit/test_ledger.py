"""The CPU ledger: each phase pays its own time, a phase inside another is not paid twice,
and threads keep their own nesting."""

import threading
import time

from conformance.ledger import BUCKETS, Ledger


def spin(seconds: float) -> None:
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_an_inner_phase_is_charged_to_itself_only():
    ledger = Ledger()
    with ledger.charge("judging"):
        spin(0.03)
        with ledger.charge("transport"):
            spin(0.05)
    spent = ledger.milliseconds()
    assert set(spent) == set(BUCKETS)
    assert 45 <= spent["transport"] <= 120
    assert 25 <= spent["judging"] <= 60  # not the 80 ms of the whole block
    assert spent["generation"] == 0


def test_waiting_costs_nothing_and_threads_nest_apart():
    ledger = Ledger()

    def work() -> None:
        with ledger.charge("generation"):
            time.sleep(0.05)  # waiting: no CPU
            with ledger.charge("recording"):
                spin(0.02)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spent = ledger.milliseconds()
    assert 35 <= spent["recording"] <= 100
    assert spent["generation"] < 20
