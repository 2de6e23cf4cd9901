"""`crossknow fetch` against a local HTTP server: the Cross-Lingual Pitfalls release served from the developers' copy
of it (the same bytes as the authors' repository at the pinned commit) is written with the recorded SHA-256s and kept
on a second run; a corrupted or missing file is refused by name and nothing is written for it."""

from __future__ import annotations

import hashlib

import pytest

from crossknow.data.releases import RELEASES
from tests.cli.in_process import run_main, user_error
from tests.conftest import SHARED_DATA
from tests.file_server import FileServer

PITFALLS = SHARED_DATA / "cross-lingual-pitfalls"


def test_the_pitfalls_release_is_written_with_its_recorded_hashes_and_kept_after(tmp_path, monkeypatch, capsys):
    files = RELEASES["pitfalls"].files
    with FileServer(PITFALLS) as server:
        first = run_main(monkeypatch, capsys, tmp_path, "fetch", "pitfalls", "--base-url", server.url,
                         "--into", str(tmp_path / "releases"))
        assert first.code == 0, first.stderr
        written = tmp_path / "releases" / "pitfalls"
        assert len(files) == 37 and {f.path for f in files} >= {"Japanese.json", "source/mmlu.json"}
        for file in files:
            data = (written / file.path).read_bytes()
            assert hashlib.sha256(data).hexdigest() == file.sha256 and len(data) == file.size, file.path
        assert sorted(p.relative_to(written).as_posix() for p in written.rglob("*") if p.is_file()) == sorted(
            f.path for f in files)
        assert "Japanese.json" in first.stdout and first.stdout.count("downloaded") == 37
        second = run_main(monkeypatch, capsys, tmp_path, "fetch", "pitfalls", "--base-url", server.url,
                          "--into", str(tmp_path / "releases"))
        assert second.code == 0 and second.stdout.count("kept") == 37
        assert max(server.requests.values()) == 1  # nothing downloaded twice


def test_a_corrupted_or_missing_file_is_refused_by_name_and_nothing_is_written_for_it(tmp_path, monkeypatch, capsys):
    served = tmp_path / "served"
    served.mkdir()
    (served / "en_knowledge_memorization.jsonl").write_text('{"not": "the release"}\n')
    with FileServer(PITFALLS, corrupt={"Japanese.json"}) as pitfalls:
        message = user_error(monkeypatch, capsys, tmp_path, "fetch", "pitfalls", "--base-url", pitfalls.url,
                             "--into", str(tmp_path / "releases"))
    assert "Japanese.json: 1,531,869 bytes with SHA-256" in message and "corrupted, or changed upstream" in message
    written = tmp_path / "releases" / "pitfalls"
    assert not (written / "Japanese.json").exists() and (written / "Chinese.json").is_file()
    assert not [p for p in written.iterdir() if p.name.startswith(".")]  # no temporary file left
    with FileServer(served) as adaxeval:
        message = user_error(monkeypatch, capsys, tmp_path, "fetch", "adaxeval", "--base-url", adaxeval.url,
                             "--into", str(tmp_path / "releases"))
    for name in ("en_knowledge_memorization.jsonl", "ja_knowledge_generalization.jsonl"):
        assert name in message
    assert "HTTP Error 404" in message
    assert not list((tmp_path / "releases" / "adaxeval").iterdir())


@pytest.mark.parametrize(("args", "expected"), [
    (("eclektic",), "Kaggle"),
    (("nonesuch",), "unknown release nonesuch; choose from adaxeval, pitfalls, eclektic"),
    (("adaxeval", "pitfalls", "--base-url", "http://127.0.0.1:9/"), "name that release alone"),
    (("pitfalls", "--base-url", "ftp://mirror/"), "not an http:// or https:// address"),
])
def test_what_cannot_be_fetched_is_refused_before_any_download(tmp_path, monkeypatch, capsys, args, expected):
    assert expected in user_error(monkeypatch, capsys, tmp_path, "fetch", *args)
    assert not (tmp_path / "releases").exists()


def test_a_file_that_cannot_be_written_is_told_apart_from_one_that_cannot_be_downloaded(tmp_path, monkeypatch,
                                                                                        capsys):
    """A file where the release's directory must go: nothing can be written there, and the message says so; a
    server that refuses the connection is a download that failed."""
    into = tmp_path / "releases"
    into.mkdir()
    (into / "pitfalls").write_text("a file, not a directory")
    with FileServer(PITFALLS) as server:
        message = user_error(monkeypatch, capsys, tmp_path, "fetch", "pitfalls", "--base-url", server.url,
                             "--into", str(into))
    assert "Japanese.json: cannot write" in message and "cannot download" not in message
    refused = user_error(monkeypatch, capsys, tmp_path, "fetch", "pitfalls", "--base-url", "http://127.0.0.1:9/",
                         "--into", str(tmp_path / "elsewhere"))
    assert "Japanese.json: cannot download http://127.0.0.1:9/Japanese.json" in refused
