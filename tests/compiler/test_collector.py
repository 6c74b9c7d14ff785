"""compiler/collector.py: the collector's settings during a build, and after it."""
import gc

from compiler.collector import YOUNG_THRESHOLD, fewer_collections


def test_a_build_holds_the_collector_back_and_gives_it_back():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with fewer_collections():
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() > frozen  # what was alive before is frozen
        with fewer_collections():  # nested: the outermost decides
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_settings_come_back_when_the_build_raises():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        with fewer_collections():
            raise ValueError("a build error")
    except ValueError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
