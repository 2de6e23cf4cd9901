"""The suite's own rules (tests/tiers.py), run on small suites of their own: tiers come from the fixtures a test
uses, and a skip fails unless the test says it may skip on another machine kind."""

from __future__ import annotations

import pytest

CONFTEST = '''
import pytest

pytest_plugins = ("tests.tiers",)


@pytest.fixture
def embedded_scorer():
    return "the model"


@pytest.fixture
def built_on_the_model(embedded_scorer):
    return embedded_scorer


@pytest.fixture
def tiny_train_run():
    return "a run"
'''


def test_tiers_follow_the_fixtures_a_test_uses_through_other_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_uses="""
def test_through_a_fixture(built_on_the_model): pass
def test_training(tiny_train_run): pass
def test_plain(): pass
""")
    model = pytester.runpytest_inprocess("-m", "model", "-q")
    model.assert_outcomes(passed=1, deselected=2)
    fast = pytester.runpytest_inprocess("-m", "not (model or server or training)", "--co", "-q")
    fast.stdout.fnmatch_lines(["test_uses.py::test_plain", "*1/3 tests collected*"])


def test_a_skip_fails_unless_the_test_may_skip(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_skips="""
import pytest

@pytest.mark.skipif(True, reason="../shared is not present")
def test_missing_file(): pass

def test_skipped_inside(): pytest.skip("the server did not start")

@pytest.mark.may_skip
@pytest.mark.skipif(True, reason="checks a machine without CUDA")
def test_another_machine(): pass

@pytest.mark.gpu
def test_gpu(): pytest.skip("needs a CUDA device")
""")
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2, failed=1, errors=1)  # a skipif mark fails the set-up, pytest.skip the call
    result.stdout.fnmatch_lines(["*unexpected skip*../shared is not present*",
                                 "*unexpected skip*the server did not start*"])


def test_a_module_skipped_at_import_fails(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_module='''
import pytest

pytest.importorskip("a_package_that_is_not_installed")


def test_never_collected(): pass
''')
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*unexpected skip*a_package_that_is_not_installed*"])
