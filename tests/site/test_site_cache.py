"""The site cache (deploy/nginx) in front of the Hub, with GPU nodes behind it, each running its
own kernelhubd: network namespaces built by site_topology.py (hub, site, 3 nodes; only the site
reaches the Hub). The Hub is the test Hub (`kernelhub-test-hub --test-endpoints`) on the fixture store; its request
log says what reached it. Needs root, iproute2 and nginx: without them this FAILS, it does not
skip (scripts/setup.sh installs both). KH_KEEP_SITE_WORK=1 keeps the work dir (every process's
log, the site's cache and access log) for a look after a failure.

Kernels used (all fixture kernels; each variant's .so is > 1 MiB, an LFS file, so every download
goes through the Hub's redirect to its object URL, which the site follows itself):
  kernels-community/relu v1         cold fetch by every node at once (one upstream GET per file)
  SageAttention/relu v1 .so (curl)  resolve metadata on HEAD and GET, cold and cached
  kernels-community/broken-python-abi v1 (curl)  Authorization, Range, errors, TTLs, renames
  kernels-community/flash-attn2 v3  site restarted in the middle of its (trickled) download
  kernels-community/flash-attn3 v1  a byte flipped in the site's cached copy: refused by the node
  kernels-community/relu v2         kernels.get_kernel (Python) through the site
and real_hub_shapes.py, for answers of the real Hub that `kernelhub serve` does not give.
"""

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import real_hub_shapes
from site_topology import (HUB_ADDR, REPO_ROOT, SITE_PORT, Hub, Node, Site, Topology, missing_prerequisites,
                           sha256_file, tree_hashes)

BIN_DIR = Path(os.environ.get("KH_BIN_DIR", REPO_ROOT / "build" / "bin"))
HUB_ROOT = Path(os.environ.get("KH_FIXTURE_HUB", REPO_ROOT / "build" / "fixtures" / "hub"))
PYTHON = os.environ.get("KERNELHUB_PYTHON") or str(REPO_ROOT / ".venv" / "bin" / "python")
NODES = 3
CLIENTS_PER_NODE = 4
REF_TTL = 2  # seconds; short so that the test sees refs expire
TYPED_ERROR = re.compile(r"^kernelhub: [a-z_]+: ", re.MULTILINE)


def store_commit(repo: str, branch: str) -> tuple[str, dict]:
    """(commit, {path: {sha256, size, lfs, git_oid}}) of a branch of the fixture store."""
    org_name = HUB_ROOT / repo
    commit = (org_name / "refs" / "heads" / branch).read_text().strip()
    files = json.loads((org_name / "commits" / f"{commit}.json").read_text())["files"]
    return commit, files


def store_object(repo: str, sha256: str) -> Path:
    return HUB_ROOT / repo / "objects" / sha256[:2] / sha256[2:]


def the_so(files: dict) -> str:
    """The CPU build's .so, which these CPU hosts fetch (a CUDA build sits beside it)."""
    (so,) = [p for p in files if p.endswith(".so") and "-cpu-" in p]
    assert files[so]["lfs"] and files[so]["size"] >= 1 << 20, f"{so} should be a > 1 MiB LFS file"
    return so


def lfs_pointer_oid(f: dict) -> str:
    """The Hub's ETag for an LFS file's resolve: the git blob id of its git-lfs pointer."""
    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{f['sha256']}\nsize {f['size']}\n".encode()
    return hashlib.sha1(b"blob %d\0" % len(pointer) + pointer).hexdigest()


def resolve_uri(repo: str, commit: str, path: str) -> str:
    return f"/kernels/{repo}/resolve/{commit}/{path}"


def check_published(result: dict, files: dict) -> dict[str, str]:
    """The variant a download handed out holds exactly the commit's bytes; returns its hashes."""
    variant_dir = Path(result["path"])
    prefix = f"build/{result['variant']}/"
    want = {p[len(prefix):]: f["sha256"] for p, f in files.items() if p.startswith(prefix)}
    got = tree_hashes(variant_dir)
    assert got == want, f"{variant_dir} holds other bytes than the commit: {got} != {want}"
    return got


def headers_of(curl_output: str) -> dict[str, str]:
    """Lower-cased header name -> value of the last response in `curl -D -` output."""
    blocks = [b for b in curl_output.replace("\r\n", "\n").split("\n\n") if b.startswith("HTTP/")]
    assert blocks, f"no HTTP response in {curl_output!r}"
    lines = blocks[-1].split("\n")
    out = {"status": lines[0].split()[1]}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            out[name.strip().lower()] = value.strip()
    return out


def upstream(hub: Hub, method: str, path: str) -> list[dict]:
    return [r for r in hub.requests() if r["method"] == method and r["path"] == path]


def wait_all(procs: list, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for proc, _ in procs:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))


@pytest.fixture(scope="module")
def site():
    problems = missing_prerequisites(BIN_DIR)
    if problems:
        pytest.fail("the site-cache test cannot run here:\n  " + "\n  ".join(problems))
    assert HUB_ROOT.is_dir(), f"fixture store {HUB_ROOT} is missing (scripts/build.sh)"
    # nginx's workers run as www-data: the work dir must be open to them (mkdtemp makes 0700).
    work = Path(tempfile.mkdtemp(prefix="kh-site-test-"))
    os.chmod(work, 0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING_FACE", "KERNELHUB_", "KERNELS_", "DIFFUSERS_", "LOCAL_KERNELS",
                                "LISTEN_", "NOTIFY_SOCKET"))}
    env.update({
        "HF_TOKEN": "",  # blank: no token, so nothing bypasses the site cache
        "HF_HOME": str(work / "hf-home"),
        # A node waiting on the site's lock for an object another node is fetching gets no byte
        # until it is complete: give that more than the default 10 s (deploy/nginx/README.md).
        "HF_HUB_DOWNLOAD_TIMEOUT": "60",
        "HF_HUB_ETAG_TIMEOUT": "60",
        "KERNELHUB_RETRY_BASE_MS": "200",
        "KERNELHUB_PYTHON": PYTHON,
    })
    try:
        with Topology(work, NODES) as topo:
            hub = Hub(topo, BIN_DIR, HUB_ROOT, work)
            site_cache = Site(topo, hub.endpoint, work / "site", work / "site.log", ["--ref-ttl", str(REF_TTL)])
            nodes = [Node(topo, i, BIN_DIR, site_cache.endpoint, work, env) for i in range(NODES)]
            yield SimpleNamespace(topo=topo, hub=hub, site=site_cache, nodes=nodes, work=work, env=env)
    finally:
        if os.environ.get("KH_KEEP_SITE_WORK"):
            print(f"site test work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def test_prerequisites():
    assert missing_prerequisites(BIN_DIR) == []


def test_only_the_site_reaches_the_hub(site):
    topo = site.topo
    # The node has a route to the Hub through the site; the site does not forward.
    blocked = topo.curl(topo.nodes[0], f"{site.hub.endpoint}/api/organizations/kernels-community/overview",
                        "--connect-timeout", "2", timeout=5)
    assert blocked.returncode in (7, 28), f"a node reached the Hub: {blocked}"
    assert topo.curl(topo.site, f"{site.hub.endpoint}/api/organizations/kernels-community/overview",
                     "--fail", "-o", "/dev/null").returncode == 0
    assert topo.curl(topo.nodes[0], f"{site.site.endpoint}/_site-cache/health", "--fail").stdout == "ok\n"


def test_cold_fetch_by_every_node_makes_one_upstream_get_per_file(site):
    repo = "kernels-community/relu"
    commit, files = store_commit(repo, "v1")
    site.hub.reset_requests()
    procs = [node.kernelhub_async(site.work / f"cold-{n}-{c}.log", "download", repo, "--version", "1", "--json")
             for n, node in enumerate(site.nodes) for c in range(CLIENTS_PER_NODE)]
    wait_all(procs, 90)

    per_node = {}
    for i, (proc, out) in enumerate(procs):
        n = i // CLIENTS_PER_NODE
        assert proc.returncode == 0, f"client on node {n} failed: {out.with_suffix('.log').read_text()[-2000:]}"
        result = json.loads(out.read_text())
        assert result["via_daemon"] and result["commit"] == commit
        assert result["path"].startswith(str(site.nodes[n].cache)), "handed out from another cache"
        per_node.setdefault(n, check_published(result, files))
    assert len(per_node) == NODES and all(h == per_node[0] for h in per_node.values())

    # The whole site asked the Hub once per file: one GET of each resolve URL (of the variant
    # the nodes selected), and one GET of each LFS object behind a redirect. HEADs never reach it.
    variant = f"build/{json.loads(procs[0][1].read_text())['variant']}/"
    fetched = {p: f for p, f in files.items() if p.startswith(variant)}
    assert any(f["lfs"] for f in fetched.values())
    log = site.hub.requests()
    for path, f in fetched.items():
        uri = resolve_uri(repo, commit, path)
        resolves = [r for r in log if r["method"] == "GET" and r["path"] == uri]
        assert len(resolves) == 1, f"{path}: {len(resolves)} upstream GETs of its resolve URL"
        if f["lfs"]:
            assert resolves[0]["status"] == 302, "the Hub answers an LFS resolve with a redirect"
            objects = [r for r in log if r["method"] == "GET" and r["path"] == f"/lfs-objects/{f['sha256']}"]
            assert len(objects) == 1, f"{path}: {len(objects)} upstream GETs of its LFS object"
    assert not [r for r in log if r["method"] == "HEAD"], "a HEAD reached the Hub"
    tree_gets = [r for r in log if f"/tree/{commit}" in r["path"]]
    assert len(tree_gets) == len({r["path"] for r in tree_gets}), "a tree listing by commit was fetched twice"
    # A missing file's 404 is never stored: each node's daemon asks once.
    status_404 = [r for r in log if r["path"].endswith(f"/resolve/{commit}/kernel-status.toml")]
    assert 1 <= len(status_404) <= NODES


def test_resolve_metadata_survives_the_followed_redirect(site):
    """What huggingface_hub (get_hf_file_metadata) and kernelhub read from a resolve answer is
    there on HEAD and GET, cold and cached, after the site followed the LFS redirect."""
    repo = "SageAttention/relu"
    commit, files = store_commit(repo, "v1")
    so = the_so(files)
    url = site.site.endpoint + resolve_uri(repo, commit, so)
    node = site.topo.nodes[1]

    def check_lfs(h: dict) -> None:
        assert h["status"] == "200", h
        assert h["x-repo-commit"] == commit
        assert h["x-linked-etag"] == f'"{files[so]["sha256"]}"'
        assert h["x-linked-size"] == str(files[so]["size"])
        assert h["etag"] == f'"{lfs_pointer_oid(files[so])}"'  # the resolve's own, not the object host's
        assert h["content-length"] == str(files[so]["size"])
        assert "location" not in h and not [k for k in h if k.startswith("x-xet")]

    cold_head = headers_of(site.topo.curl(node, url, "-sS", "-I").stdout)
    check_lfs(cold_head)
    assert cold_head["x-site-cache"] == "MISS"
    cached_head = headers_of(site.topo.curl(node, url, "-sS", "-I").stdout)
    check_lfs(cached_head)
    body = site.work / "sage-relu.so"
    get = site.topo.curl(node, url, "-sS", "-D", "-", "-o", str(body))
    check_lfs(headers_of(get.stdout))
    assert headers_of(get.stdout)["x-site-cache"] == "HIT"
    assert sha256_file(body) == files[so]["sha256"]

    small = next(p for p in files if p.endswith("metadata.json"))
    h = headers_of(site.topo.curl(node, site.site.endpoint + resolve_uri(repo, commit, small), "-sS", "-I").stdout)
    assert h["status"] == "200" and h["x-repo-commit"] == commit
    assert h["etag"] == f'"{files[small]["git_oid"]}"' and h["content-length"] == str(files[small]["size"])
    assert "x-linked-etag" not in h


def test_cache_rules(site):
    topo, hub, endpoint = site.topo, site.hub, site.site.endpoint
    node = topo.nodes[2]
    repo = "kernels-community/broken-python-abi"  # only its files matter here
    commit, files = store_commit(repo, "v1")
    so = the_so(files)
    so_uri = resolve_uri(repo, commit, so)
    meta = next(p for p in files if p.endswith("metadata.json"))
    hub.reset_requests()

    # Authorization: bypasses the cache both ways and reaches the Hub as sent; the object host
    # behind the redirect never sees it.
    for _ in range(2):
        h = headers_of(topo.curl(node, endpoint + so_uri, "-D", "-", "-o", "/dev/null",
                                 "-H", "Authorization: Bearer hf_site_test").stdout)
        assert h["status"] == "200" and h["x-site-cache"] == "BYPASS"
        assert h["x-linked-etag"] == f'"{files[so]["sha256"]}"'
    resolves = upstream(hub, "GET", so_uri)
    assert len(resolves) == 2 and all(r["authorization"] for r in resolves)
    objects = upstream(hub, "GET", f"/lfs-objects/{files[so]['sha256']}")
    assert len(objects) == 2 and not any(r["authorization"] for r in objects)
    h = headers_of(topo.curl(node, endpoint + so_uri, "-D", "-", "-o", "/dev/null").stdout)
    assert h["x-site-cache"] == "MISS", "an answer to an authorized request was stored"

    # Range: a cold range request makes the site fetch the whole object once (upstream 200,
    # never a 206) and cut the range; later ranges come from the cache.
    meta_uri = resolve_uri(repo, commit, meta)
    want = store_object(repo, files[meta]["sha256"]).read_bytes()
    for first, last, status in ((10, 29, "MISS"), (100, 139, "HIT")):
        out = topo.curl(node, endpoint + meta_uri, "-D", str(site.work / "range.h"), "-o", str(site.work / "range.b"),
                        "-r", f"{first}-{last}")
        h = headers_of((site.work / "range.h").read_text())
        assert h["status"] == "206" and h["x-site-cache"] == status, (out, h)
        assert h["content-range"] == f"bytes {first}-{last}/{len(want)}"
        assert (site.work / "range.b").read_bytes() == want[first:last + 1]
    assert [r["status"] for r in upstream(hub, "GET", meta_uri)] == [200]

    # Errors are never stored: a 404 twice is two upstream requests; a 429 is not kept either.
    missing = resolve_uri(repo, commit, "no/such/file")
    for _ in range(2):
        assert headers_of(topo.curl(node, endpoint + missing, "-D", "-", "-o", "/dev/null").stdout)["status"] == "404"
    assert len(upstream(hub, "GET", missing)) == 2
    overview = "/api/organizations/SageAttention/overview"
    hub.set_faults({"fail_status": 429, "fail_count": 1, "fail_path_filter": overview})
    try:
        statuses = [headers_of(topo.curl(node, endpoint + overview, "-D", "-", "-o", "/dev/null").stdout)
                    for _ in range(3)]
    finally:
        hub.set_faults({})
    assert [(h["status"], h.get("x-site-cache")) for h in statuses] == [("429", "MISS"), ("200", "MISS"),
                                                                       ("200", "HIT")]

    # Refs are kept REF_TTL seconds; answers by commit are kept.
    refs = f"/api/kernels/{repo}/refs"
    tree = f"/api/kernels/{repo}/tree/{commit}/build"
    def cache_status(path: str) -> str:
        return headers_of(topo.curl(node, endpoint + path, "-D", "-", "-o", "/dev/null").stdout)["x-site-cache"]

    for path in (refs, tree):
        cache_status(path)
        assert cache_status(path) == "HIT"
    time.sleep(REF_TTL + 1)
    assert cache_status(refs) != "HIT"  # EXPIRED, or STALE while a background refresh runs
    assert cache_status(tree) == "HIT"

    # A renamed repo's redirect (relative Location) reaches the client as the Hub sent it, on
    # the API and on resolve, and is not stored.
    hub.set_faults({"renames": {f"{repo}-renamed": repo}})
    try:
        for path in (f"/api/kernels/{repo}-renamed/refs", resolve_uri(f"{repo}-renamed", commit, so)):
            h = headers_of(topo.curl(node, endpoint + path, "-D", "-", "-o", "/dev/null").stdout)
            assert h["status"] == "307" and h["location"] == path.replace(f"{repo}-renamed", repo), h
    finally:
        hub.set_faults({})

    # Dot segments, raw or percent-encoded, would be classified here as one URL and read by the
    # Hub as another (another repo's listing, /api/whoami-v2): refused, never sent upstream.
    hub.reset_requests()
    tree_at = f"/api/kernels/{repo}/tree/{commit}"
    for path in (f"{tree_at}/../../../../SageAttention/x/tree/main", f"{tree_at}/%2e%2e/%2E%2e/x",
                 f"{tree_at}%2F..%2F..%2Fx", f"/api/kernels/{repo}/revision/..", f"{tree_at}/.",
                 resolve_uri(repo, commit, "build/../../../../../api/whoami-v2")):
        h = headers_of(topo.curl(node, endpoint + path, "--path-as-is", "-D", "-", "-o", "/dev/null").stdout)
        assert h["status"] == "400", (path, h)
    assert hub.requests() == []


def test_real_hub_answers_that_kernelhub_serve_does_not_give(site):
    """Xet, the resolve cache, org-less repos, an object host's cookie: answers of the real Hub,
    played by real_hub_shapes.py, through a second site cache on another port."""
    topo, node = site.topo, site.topo.nodes[0]
    port = 9090
    shapes = topo.popen(topo.hub, [sys.executable, real_hub_shapes.__file__, HUB_ADDR, str(port)],
                        site.work / "shapes.log")
    upstream_url = f"http://{HUB_ADDR}:{port}"
    deadline = time.monotonic() + 20
    while topo.curl(topo.site, f"{upstream_url}/_log", "--fail", "-o", "/dev/null", timeout=2).returncode != 0:
        assert shapes.poll() is None and time.monotonic() < deadline, (site.work / "shapes.log").read_text()
        time.sleep(0.1)
    second = Site(topo, upstream_url, site.work / "site2", site.work / "site2.log", port=SITE_PORT + 1)
    sha = real_hub_shapes.SHA
    try:
        def get(path: str, *args: str) -> tuple[dict, bytes]:
            body = site.work / "shape.body"
            out = topo.curl(node, second.endpoint + path, "-D", "-", "-o", str(body), *args)
            return headers_of(out.stdout), body.read_bytes()

        # A listing's "xetHash" is renamed (clients would go to the Xet CAS around the site).
        for status in ("MISS", "HIT"):
            h, body = get(f"/api/models/org/name/tree/{sha}")
            assert h["x-site-cache"] == status and b'"xetHash"' not in body, (h, body)
            assert json.loads(body)[0]["lfs"]["oid"] == real_hub_shapes.LINKED_ETAG.strip('"')
        # The resolve cache: its host-less 307 reaches the client as sent; what it leads to is a
        # file, stored by commit, and a file's bytes are never edited (even JSON naming xetHash).
        h, _ = get("/org/name/resolve/main/small.json")
        assert h["status"] == "307" and h["location"].startswith(f"/api/resolve-cache/models/org/name/{sha}/")
        location = h["location"]
        for status in ("MISS", "HIT"):
            h, body = get(location)
            assert h["x-site-cache"] == status and body == real_hub_shapes.SMALL_BODY, (h, body)
        for status in ("MISS", "HIT"):
            assert get(f"/legacy/resolve/{sha}/config.json")[0]["x-site-cache"] == status
        # An Xet/LFS file: the site follows the redirect; no Xet header or Link reaches the
        # client, the object host's ETag and cookie neither, and the answer is stored.
        for status in ("MISS", "HIT"):
            h, body = get(f"/org/name/resolve/{sha}/xet.bin")
            assert h["status"] == "200" and h["x-site-cache"] == status and body == real_hub_shapes.XET_BODY, h
            assert h["x-repo-commit"] == sha and h["x-linked-etag"] == real_hub_shapes.LINKED_ETAG
            assert h["etag"] == f'"{"4" * 40}"' and h["x-linked-size"] == str(len(real_hub_shapes.XET_BODY))
            assert not [k for k in h if k.startswith("x-xet") or k in ("link", "set-cookie", "location")], h
        log = json.loads(topo.curl(topo.site, f"{upstream_url}/_log", "--fail").stdout)
        assert log.count(["GET", "/cdn/xet.bin?sig=1"]) == 1
    finally:
        second.stop()
        Topology.stop(shapes)


def test_site_restart_in_the_middle_of_a_download(site):
    """nginx stopped (fast stop: transfers cut) and started again while the only copy of an
    object is halfway from the Hub: no client gets half a file, each succeeds or fails with a
    typed error, and what the nodes publish verifies."""
    repo = "kernels-community/flash-attn2"
    commit, files = store_commit(repo, "v3")
    so = the_so(files)
    size = files[so]["size"]
    key_uri = resolve_uri(repo, commit, so)
    object_path = f"/lfs-objects/{files[so]['sha256']}"
    rate = 1 << 20  # ~4 s for the 4.3 MB .so
    site.hub.reset_requests()
    site.hub.set_faults({"trickle_bytes_per_second": rate, "path_filter": Path(so).name})
    try:
        nodes = site.nodes[1:]
        procs = [node.kernelhub_async(site.work / f"restart-{n}-{c}.log", "download", repo, "--version", "3",
                                      "--json") for n, node in enumerate(nodes) for c in range(2)]
        # Mid-transfer: the site's temp file for the object has some, not all, of its bytes.
        deadline = time.monotonic() + 30
        partial = 0
        while time.monotonic() < deadline:
            sizes = [p.stat().st_size for p in site.site.temp_files() if p.exists()]
            partial = max(sizes, default=0)
            if rate // 2 <= partial < size:
                break
            time.sleep(0.05)
        assert rate // 2 <= partial < size, f"the object never got halfway to the site (temp file {partial} bytes)"
        assert all(proc.poll() is None for proc, _ in procs), "a client finished before the restart"
        assert len(upstream(site.hub, "GET", object_path)) == 1

        cut = site.site.temp_files()
        site.site.stop()
        assert not site.site.cache_file(key_uri).exists(), "a cut transfer was stored under its key"
        site.site.start()
        assert not [p for p in cut if p.exists()], "the cut transfer's temp file outlived the restart"
        wait_all(procs, 120)
    finally:
        site.hub.set_faults({})

    outcomes = []
    for proc, out in procs:
        err = out.with_suffix(".log").read_text()
        if proc.returncode == 0:
            check_published(json.loads(out.read_text()), files)
            outcomes.append("ok")
        else:
            assert TYPED_ERROR.search(err), f"a client failed without a typed error: {err[-2000:]}"
            outcomes.append(err)
    # The site fetched the object again after the restart, once.
    assert len(upstream(site.hub, "GET", object_path)) == 2
    for node in nodes:
        again = node.kernelhub("download", repo, "--version", "3", "--json")
        assert again.returncode == 0, again.stderr
        check_published(json.loads(again.stdout), files)
        verify = node.kernelhub("verify", "--json")
        assert verify.returncode == 0, f"{verify.stdout}{verify.stderr}"
    print(f"clients across the restart: {outcomes}")


def test_corrupted_site_answer_is_refused_and_nothing_published(site):
    repo = "kernels-community/flash-attn3"
    commit, files = store_commit(repo, "v1")
    so = the_so(files)
    size = files[so]["size"]
    uri = resolve_uri(repo, commit, so)
    topo, node = site.topo, site.nodes[2]

    # The site caches the object (fetched by someone else), then its copy loses one bit.
    assert topo.curl(topo.nodes[0], site.site.endpoint + uri, "--fail", "-o", "/dev/null").returncode == 0
    cached = site.site.cache_file(uri)
    assert cached.exists(), f"no cache file {cached} for {uri}"
    with open(cached, "r+b") as f:
        f.seek(cached.stat().st_size - size + size // 2)  # the body ends the file
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x01]))
    served = site.work / "corrupt.so"
    h = headers_of(topo.curl(topo.nodes[2], site.site.endpoint + uri, "-D", "-", "-o", str(served)).stdout)
    assert h["x-site-cache"] == "HIT" and sha256_file(served) != files[so]["sha256"]

    result = node.kernelhub("download", repo, "--version", "1", "--json")
    assert result.returncode == 7, f"exit {result.returncode}: {result.stderr}"
    assert re.search(r"^kernelhub: hash_mismatch: ", result.stderr, re.MULTILINE), result.stderr
    repo_dir = node.cache / f"kernels--{repo.replace('/', '--')}"
    assert not (repo_dir / "snapshots" / commit).exists(), "a snapshot was published from corrupt bytes"
    assert not (repo_dir / "blobs" / files[so]["sha256"]).exists()
    verify = node.kernelhub("verify", "--json")
    assert verify.returncode == 0, f"{verify.stdout}{verify.stderr}"


def test_kernels_get_kernel_through_the_site(site):
    """The official Python clients, in a node namespace, with HF_ENDPOINT at the site: the file
    metadata of an LFS file, then kernels.get_kernel loading a kernel cold through the site."""
    repo = "kernels-community/relu"
    commit, files = store_commit(repo, "v2")
    so = the_so(files)
    cache = site.work / "python-cache"
    script = r"""
import json, os, sys
import torch
from huggingface_hub import get_hf_file_metadata, hf_hub_url
from kernels import get_kernel
repo, commit, so = sys.argv[1:4]
meta = get_hf_file_metadata(hf_hub_url(repo, so, repo_type="kernel", revision=commit))
kernel = get_kernel(repo, version=2, backend="cpu")
x = torch.randn(8, 16)
out = torch.empty_like(x)
kernel.relu(out, x)
torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)
torch.testing.assert_close(kernel.scaled_relu(x, 2.0), torch.relu(x) * 2.0)
print(json.dumps({"etag": meta.etag, "size": meta.size, "commit": meta.commit_hash, "location": meta.location,
                  "version": kernel.fixture_version(), "file": kernel.__file__}))
"""
    env = {k: v for k, v in site.env.items() if k != "HF_TOKEN"}
    env.update({"HF_ENDPOINT": site.site.endpoint, "HF_HOME": str(site.work / "py-home"), "HF_HUB_CACHE": str(cache),
                "KERNELS_CACHE": str(cache), "HF_HUB_DISABLE_TELEMETRY": "1",
                # kernels 0.17.2 + huggingface_hub 2.4.0 send a User-Agent ending in "; " without it.
                "HF_HUB_USER_AGENT_ORIGIN": "kernelhub-site-test"})
    site.hub.reset_requests()
    out = site.topo.run(site.topo.nodes[1], [PYTHON, "-c", script, repo, commit, so], env=env, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["etag"] == files[so]["sha256"] and got["size"] == files[so]["size"] and got["commit"] == commit
    assert got["location"].startswith(site.site.endpoint), "the client was sent past the site"
    assert got["version"] == 2 and Path(got["file"]).resolve().is_relative_to(cache.resolve())
    blob = cache / f"kernels--{repo.replace('/', '--')}" / "blobs" / files[so]["sha256"]
    assert sha256_file(blob) == files[so]["sha256"]
    assert len(upstream(site.hub, "GET", f"/lfs-objects/{files[so]['sha256']}")) == 1
    assert not [r for r in site.hub.requests() if r["method"] == "HEAD"]


def test_site_down_cached_kernels_still_served(site):
    repo = "kernels-community/relu"
    commit, files = store_commit(repo, "v1")
    node = site.nodes[0]
    warm = node.kernelhub("download", repo, "--version", "1", "--json")
    assert warm.returncode == 0, warm.stderr

    site.site.stop()
    try:
        down = site.topo.curl(site.topo.nodes[0], f"{site.site.endpoint}/_site-cache/health", timeout=5)
        assert down.returncode == 7, "the site still answers"
        runs = [node.kernelhub_async(site.work / f"down-{c}.log", "download", repo, "--version", "1", "--json")
                for c in range(CLIENTS_PER_NODE)]
        runs.append(node.kernelhub_async(site.work / "down-pinned.log", "download", repo, "--revision", commit,
                                         "--json"))
        wait_all(runs, 60)
        for proc, out in runs:
            assert proc.returncode == 0, out.with_suffix(".log").read_text()[-2000:]
            result = json.loads(out.read_text())
            assert result["commit"] == commit and result["via_daemon"]
            check_published(result, files)
    finally:
        site.site.start()
