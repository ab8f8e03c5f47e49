"""Sessions are freed as soon as they end, not by the cycle collector (Session.release)."""

import gc
from pathlib import Path

from magma.sim.runner import Simulation
from magma.sim.scenario import load_scenario

EXAMPLES = Path(__file__).parent.parent.parent / "examples"


def test_sessions_leave_no_reference_cycles():
    sim = Simulation(load_scenario([EXAMPLES / "seed-h100"]), until=7200)
    gc.collect()
    before = {id(o) for o in gc.get_objects()}  # what earlier tests left alive may be freed during the run
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        trace = sim.run()
        gc.collect()
        made = [o for o in gc.garbage if id(o) not in before]
        ours = {type(o).__name__ for o in made if type(o).__module__.startswith("magma")}
        left = len(made)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    ran = len(trace.sessions)
    assert ran >= 8 and sum(s.binds for s in trace.sessions) > 0  # sessions that placed work
    # Nothing magma makes (the session, its plugins, the allocator and its groups, ...) is left to the cycle
    # collector; what is left comes from the standard library's own closures (ast.literal_eval's, a few a call).
    assert not ours, ours
    assert left < 50 * ran, f"{left} objects in reference cycles after {ran} sessions"
