"""The published releases of the three methods' data, each file pinned by its address, size and SHA-256.

`fetch_release` downloads a release's files into a directory (`crossknow fetch`), each written atomically only when
its size and SHA-256 are the ones recorded here, and keeps a file already there with the right hash. The addresses
are raw files of the authors' repositories at a fixed commit, so that a release changed upstream is refused by name
rather than scored as if it were the same (crossknow's choice); `base_url` points at a mirror instead.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from crossknow.errors import CrossknowError
from crossknow.store.atomic import atomic_write
from crossknow.store.hashing import file_sha256

CHUNK_BYTES = 1 << 20
TIMEOUT_S = 60


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release."""

    path: str
    """Its path under the release's base address and under the directory it is fetched into."""
    size: int
    sha256: str


@dataclass(frozen=True)
class Release:
    """A published data release."""

    name: str
    what: str
    page: str
    """Where the authors publish it."""
    base_url: str | None
    """The pinned address of its files (None: it cannot be fetched without an account; `unavailable` says why)."""
    files: tuple[ReleaseFile, ...] = ()
    unavailable: str = ""


def _files(table: str) -> tuple[ReleaseFile, ...]:
    """ReleaseFiles from lines of 'PATH SIZE SHA256'."""
    return tuple(ReleaseFile(path, int(size), sha256) for path, size, sha256 in (line.split() for line in
                                                                                 table.strip().splitlines()))


RELEASES = {
    "adaxeval": Release(
        "adaxeval", "AdaXEval: English and Japanese memorisation (cloze) and generalisation (question) sets",
        "https://github.com/xzhao-tkl/mlda-eval",
        "https://raw.githubusercontent.com/xzhao-tkl/mlda-eval/91b05d3f1c96bcaacb0df200ba703b0259412c7c/"
        "datasets/generate_eval/99_adaxeval_datasets/",
        _files("""
en_knowledge_memorization.jsonl 2631419 a97cbfa6be7c8e20ea24a4b62beb00d258011b614528f08ee9868ca2f59fc89c
en_knowledge_generalization.jsonl 2633388 65707b2491ffddc133827c357f9289b6e19228862362b6919f2f8c9ffcf2d0e0
ja_knowledge_memorization.jsonl 2295211 dea981a2d6cd65d8a98b4030998bd370b5f7e1ce5fe407a05b4b576160ec1acf
ja_knowledge_generalization.jsonl 2251584 06391b16ef9aabd9f25479d0c8149990f08a71692d388234750ad849a16d813d
"""),
    ),
    "pitfalls": Release(
        "pitfalls", "Cross-Lingual Pitfalls: bilingual pairs of 16 languages, the paper's results, the source sets",
        "https://github.com/xzx34/Cross-Lingual-Pitfalls",
        "https://raw.githubusercontent.com/xzx34/Cross-Lingual-Pitfalls/3d7b478363d89bd3307303b67c2cb4fa8fda534c/data/",
        _files("""
Amharic.json 2854032 e383d07d151e4e5ba0a2e5b23c263ccc82cc692036437ca1bd8f18a329a4c885
Amharic_results.json 734 a755b46c702bcf204eedb3ca00cda7b3e26ba87489a495ddb6c8fbb01e4f4c3c
Arabic.json 2365772 6b0902dcc79247498ecc61c3d3a94173bb6a3e94ea5f76c299ae944251f0cdb7
Arabic_results.json 733 9f13a5b80d9b8aaff4276c000c1d85ee8a27c9f13ddba5f54c955567a5057cc1
Bengali.json 2976279 ca49438e78c2a3413d18b067acb29d0866f3ae6cda212f84151d31f6099654be
Bengali_results.json 734 a1a0130c4fc976d82b895081f88644be52b9aab3d80dd3a28d25d7eb396f4424
Chinese.json 1407935 2501e429fbc063c4a795d54b9da096fac8915d69980d24a9be3a7cb6a3138ab5
Chinese_results.json 734 c9346b85bab0f5bdcca9b56539a1a0121fb9f5077520bc4e4d52cb1f1c8108e0
French.json 1671327 dca100aa6050f1bc93f74355b62bba30a26109f2611125b7a5146d616c19ff0d
French_results.json 732 7e90b2c919079292420c2a2e27f242851bce5f5e6436513b08ccc9fd6fbfbdf6
German.json 1789235 c80f56ae09e3c45057130aa595bb1b3335cde135c7a670a8dcfd61d8f8a80d41
German_results.json 732 8b517a95e85abcf8fc604c6a22bc2da6ab8a20a1ae5c33b13e5b29cb01c96d31
Hebrew.json 1653898 610a0f740c567c96b208ee0f2fe34fe7a52d44b96163349cf586722a38a0c13b
Hebrew_results.json 732 b417fbf0476c2b89f473ac54956d149545a490e530185db6b04fbfbe1bfbb8e6
Hindi.json 2594451 26731f0dee74dc9e847b6e9d130367c35c8170bca1a6894c4e43b3f2073e9ef2
Hindi_results.json 731 d723b2da765920b5ad5f5d711ae803901b723ca755d6b79be59a97650dfeaf47
Italian.json 1423839 312a3df36cc419f96d5249c8d05f316e8d126a3c59950669f156e074172f4d4f
Italian_results.json 733 1a4dd32c765fe523482f26807df071311b9d5e6fd604821ff9a50bb90034eee8
Japanese.json 1531869 15d66fcf7f05a4d4f291adc892145b13dbb492318b213315cc53695c1c8152f7
Japanese_results.json 733 7591dab271b2101cc833ce7410fa118d85f7885ccdac26c4093ff7ff582528da
Korean.json 2127877 18dc0b9d7fb29a963f791d23cc2ed9454e3bb25e4091070ea847b2c0b4dee9bd
Korean_results.json 733 3dca9e5f53289726c030ad765e1f936e7320b93da572157a2c341b8febfd36b9
Spanish.json 1182702 e716a83e0c99a5ed1b78a0df0131c9299813443ea6787dc7798f3c96b13e0329
Spanish_results.json 732 8cdb78e2311d2ba31c018ebe61f0ed567f2e93ce84252e7417a0e9b5973ca1ea
Swahili.json 1677349 e6f4c915cbc460b01960bb259341036ef44a8499e3c48c9445195d96428aa5e1
Swahili_results.json 733 dcca0772091e2f75da835f41d79f74bac174faa98c5157b5ec89631f1901bef9
Ukrainian.json 1936772 083072ac0699b5286a0fac25f050df6a41b07e9dc243eb57d55c24f72ead0b32
Ukrainian_results.json 735 7ca4742089933bc978dd3744f307e7c2b0ef93072f43736f239a7743df8e0c86
Yoruba.json 2931594 0c4b19d3997f523dbdd33e11d36f884ebea21747e4c93d91a0ce19f08e01d41c
Yoruba_results.json 735 0246e34428c29ac1a5ac720c887e6d0505d8e3172b951feb7af9dc8e042e65ba
Zulu.json 2507243 06d7b311a601c7308fcbf0d37e0723eba7af5e2515cfbf2dcecd1d2146469f15
Zulu_results.json 732 5cffb9c4674026efc3d236dd67fc89719044ab669c9efac975b4e1837989654a
source/ai2_arc_easy.json 778090 a385f4874570524f0745ab57d05c902d030866feb19d340c16138e83c8684d33
source/commonsense_qa.json 3199610 2c9030b1c7e2f534a7ac40120cdf94fc6b8342f7a7223e7eb9fc7d6ef187bfd6
source/mmlu.json 204607 de01702aa031378597cde6e7825939939ce51a454b73aecfe1a3f14a68bc18cc
source/sciq.json 305330 eabce15f0a4847da4f45c68dcad2f248b619ca1e60d85f83acd0c0d48c34a91b
source/truthful_qa.json 436808 3fa991fa9479ca839af116348be3368db33801ecb6d36125c06597d915018e39
"""),
    ),
    "eclektic": Release(
        "eclektic", "ECLEKTIC: closed-book questions on facts of one language's Wikipedia",
        "https://www.kaggle.com/datasets/omergoldman/eclektic", None,
        unavailable="The paper publishes it on Kaggle, which serves its files only to a signed-in account (its API "
        "needs a token), so crossknow cannot fetch it: download eclektic_main.jsonl from "
        "https://www.kaggle.com/datasets/omergoldman/eclektic and pass it to `crossknow eclektic run --data`.",
    ),
}
"""Every release `crossknow fetch` knows, by name."""


@dataclass(frozen=True)
class Fetched:
    """What `fetch_release` did with one file."""

    file: ReleaseFile
    path: Path
    status: str
    """'downloaded', 'kept' (already there with its SHA-256) or the reason it was refused."""


def _download(url: str, file: ReleaseFile, target: Path, on_bytes: Callable[[int], None] | None) -> None:
    """Write `url`'s body to `target` atomically, only if its size and SHA-256 are `file`'s."""

    def write(handle) -> None:
        digest, size = hashlib.sha256(), 0
        with _reading():
            response = urllib.request.urlopen(url, timeout=TIMEOUT_S)  # noqa: S310 - http(s) addresses only
        with response:
            for block in iter(lambda: _read(response), b""):
                digest.update(block)
                size += len(block)
                if size > file.size:
                    raise CrossknowError(f"{file.path}: larger than its recorded {file.size:,} bytes")
                handle.write(block)
                if on_bytes:
                    on_bytes(len(block))
        if size != file.size or digest.hexdigest() != file.sha256:
            raise CrossknowError(f"{file.path}: {size:,} bytes with SHA-256 {digest.hexdigest()}, not the release's "
                                 f"{file.size:,} bytes with {file.sha256} (corrupted, or changed upstream)")

    atomic_write(target, write, binary=True)


@contextmanager
def _reading() -> Iterator[None]:
    """Network failures (refused, reset, timed out: OSErrors too) as URLError, so that an OSError left over is the
    disk's."""
    try:
        yield
    except urllib.error.URLError:
        raise
    except OSError as error:
        raise urllib.error.URLError(error) from error


def _read(response) -> bytes:
    with _reading():
        return response.read(CHUNK_BYTES)


def fetch_release(release: Release, into: Path, base_url: str | None = None,
                  on_bytes: Callable[[int], None] | None = None) -> list[Fetched]:
    """Fetch every file of `release` into `into` (its paths kept), from `base_url` or the release's own address.

    A file already there with the recorded SHA-256 is kept. A download whose size or SHA-256 differs, or that fails,
    writes nothing and is reported with its reason; the other files are still fetched. `on_bytes(n)` after each
    block written."""
    if release.base_url is None:
        raise CrossknowError(f"{release.name}: {release.unavailable}")
    base = (base_url or release.base_url).rstrip("/") + "/"
    if not base.startswith(("http://", "https://")):
        raise CrossknowError(f"--base-url {base_url}: not an http:// or https:// address")
    results = []
    for file in release.files:
        target = into / file.path
        if target.is_file() and target.stat().st_size == file.size and file_sha256(target) == file.sha256:
            results.append(Fetched(file, target, "kept"))
            continue
        try:
            _download(base + file.path, file, target, on_bytes)
        except CrossknowError as error:
            results.append(Fetched(file, target, str(error)))
        except urllib.error.URLError as error:  # HTTPError is one: 404, 500; and refused, reset, timed out
            results.append(Fetched(file, target, f"{file.path}: cannot download {base + file.path}: {error}"))
        except OSError as error:  # the disk: full, read-only, a file where a directory must be
            results.append(Fetched(file, target, f"{file.path}: cannot write {target}: {error}"))
        else:
            results.append(Fetched(file, target, "downloaded"))
    return results
