"""fiocheck.in_order_turns: turns taken while a probe says the host is slow are left out,
whatever they measured, and a check that never gets its count of turns in order says so."""

import pytest

from boatload.measure import fiocheck


def _scripted(values):
    it = iter(values)
    return lambda: next(it)


def test_turns_in_a_slow_spell_are_left_out_and_the_middle_turn_in_order_is_returned():
    # the probes around turns 2-4 fall to a fifth (a spell): those turns are out, whatever they measured
    probes = _scripted([400, 410, 80, 90, 395, 405, 400, 390, 410])
    ratios = iter([1.01, 0.5, 0.55, 0.99, 1.03, 1.0, 0.98, 1.02])
    r = fiocheck.in_order_turns(lambda: {"ratio": next(ratios)}, probes, 5, "ratio")
    assert not r["short"]
    assert r["turns"] == [0.98, 1.0, 1.01, 1.02, 1.03]
    assert r["ratio"] == 1.01
    assert sorted(k for k, _ in r["out_of_order"]) == [0.5, 0.55, 0.99]


def test_a_spell_seen_only_later_still_leaves_the_early_turns_out():
    # the first turns' probes are low against the best seen later: they were in a spell
    probes = _scripted([100, 100, 100, 400, 400, 400, 400, 400, 400])
    ratios = iter([0.6, 0.6, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    r = fiocheck.in_order_turns(lambda: {"ratio": next(ratios)}, probes, 5, "ratio")
    assert r["turns"] == [1.0] * 5 and [k for k, _ in r["out_of_order"]] == [0.6, 0.6, 1.0]


def test_a_check_that_never_finds_the_host_in_order_says_it_is_short(monkeypatch):
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(fiocheck.time, "monotonic", lambda: next(clock))
    probes = _scripted([400] + [50, 400] * 50)  # every turn has a slow probe beside it
    r = fiocheck.in_order_turns(lambda: {"ratio": 1.0}, probes, 5, "ratio", limit_s=60)
    assert r["short"] and len(r["turns"]) < 5


def test_an_even_count_of_turns_is_refused_by_name():
    with pytest.raises(ValueError, match="turns"):
        fiocheck.in_order_turns(lambda: {"ratio": 1.0}, lambda: 1.0, 4, "ratio")
