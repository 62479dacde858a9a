"""The docker backend beyond the shared suite: container hardening, recycling, image caching."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlhub.sandbox import ExecRequest, Limits

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def docker_backend() -> Iterator[Any]:
    from rlhub.sandbox.docker_backend import DockerBackend, engine_problem

    problem = engine_problem()
    if problem:
        pytest.skip(f"no Docker engine reachable ({problem}); run .ci/docker-setup.sh")
    backend = DockerBackend(containers=1, slots=4, jobs_per_container=5)
    yield backend
    backend.close()


def container_of(backend: Any) -> Any:
    worker = backend.pool[0]
    assert worker is not None
    return worker.container


def test_containers_run_hardened_with_no_network_and_a_read_only_root(docker_backend: Any) -> None:
    assert docker_backend.run(ExecRequest(code="pass")).status == "ok"
    config = container_of(docker_backend).attrs["HostConfig"]
    assert config["NetworkMode"] == "none" and config["ReadonlyRootfs"] is True
    assert config["CapDrop"] == ["ALL"] and config["IpcMode"] == "none"
    assert config["Memory"] > 0 and config["PidsLimit"] > 0
    assert "no-new-privileges" in config["SecurityOpt"]


def test_jobs_inside_containers_have_no_capabilities(docker_backend: Any) -> None:
    result = docker_backend.run(ExecRequest(code="print(open('/proc/self/status').read())"))
    caps = dict(line.split(":\t") for line in result.stdout.splitlines() if line.startswith("Cap"))
    assert caps["CapEff"].strip() == "0000000000000000"
    assert "NoNewPrivs:\t1" in result.stdout


def test_a_container_is_recycled_after_a_job_that_hit_a_limit(docker_backend: Any) -> None:
    docker_backend.run(ExecRequest(code="pass"))
    before = container_of(docker_backend).id
    hit = docker_backend.run(
        ExecRequest(code="import time; time.sleep(9)", limits=Limits(wall_s=0.3))
    )
    assert hit.status == "timeout"
    old_block = docker_backend.pool[0].block
    after = docker_backend.run(ExecRequest(code="print('fresh')"))
    assert after.stdout == "fresh\n" and container_of(docker_backend).id != before
    # the replacement never shares host uids with the container it replaces (RLIMIT_NPROC is
    # counted per host uid), even while that one may still be draining
    assert docker_backend.pool[0].block != old_block
    uid = docker_backend.run(ExecRequest(code="import os; print(os.getuid())"))
    first_uid = docker_backend.blocks.base(docker_backend.pool[0].block) + 1000
    assert first_uid <= int(uid.stdout) < first_uid + docker_backend.slots


def test_uid_blocks_come_back_when_containers_go() -> None:
    from rlhub.sandbox.docker_backend import UID_BLOCKS_PER_CONTAINER, DockerBackend, engine_problem

    if engine_problem():
        pytest.skip("no Docker engine reachable; run .ci/docker-setup.sh")
    backend = DockerBackend(containers=1, slots=2)
    try:
        for _ in range(2 * UID_BLOCKS_PER_CONTAINER):  # every job hits a limit: a new container
            hit = backend.run(ExecRequest(code="while True: pass", limits=Limits(wall_s=0.2)))
            assert hit.status == "timeout", hit
        assert backend.run(ExecRequest(code="print('still')")).stdout == "still\n"
    finally:
        backend.close()
    assert len(backend.blocks.free) == UID_BLOCKS_PER_CONTAINER


def test_a_container_is_recycled_after_its_job_budget(docker_backend: Any) -> None:
    docker_backend.run(ExecRequest(code="pass"))
    first = container_of(docker_backend).id
    ids = set()
    for _ in range(docker_backend.jobs_per_container + 1):
        assert docker_backend.run(ExecRequest(code="pass")).status == "ok"
        ids.add(container_of(docker_backend).id)
    assert first not in ids or len(ids) > 1


def test_jobs_asking_for_the_network_are_refused_with_the_reason(docker_backend: Any) -> None:
    result = docker_backend.run(ExecRequest(code="pass", limits=Limits(network=True)))
    assert result.status == "infra_error" and "--network none" in result.detail


def test_domain_images_are_built_once_and_cached_by_content_hash(
    docker_backend: Any, tmp_path: Path
) -> None:
    from rlhub.sandbox.docker_backend import ensure_image

    client = docker_backend.client
    base = docker_backend.image
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM {base}\nCOPY data.txt /opt/data.txt\n")
    (tmp_path / "data.txt").write_text("one")
    first = ensure_image(client, None, dockerfile, tmp_path)
    assert ensure_image(client, None, dockerfile, tmp_path) == first
    (tmp_path / "data.txt").write_text("two")
    second = ensure_image(client, None, dockerfile, tmp_path)
    assert second != first and second.startswith("rlhub-sandbox:")
    for tag in (first, second):
        client.images.remove(tag, force=True)


def test_a_container_the_engine_refuses_is_an_infra_error_not_a_crash() -> None:
    from rlhub.sandbox.docker_backend import DockerBackend, engine_problem

    if engine_problem():
        pytest.skip("no Docker engine reachable; run .ci/docker-setup.sh")
    backend = DockerBackend(containers=1, slots=2, memory_mb=1)  # dockerd's minimum is 6 MiB
    try:
        result = backend.run(ExecRequest(code="print(1)"))
        assert result.status == "infra_error", result
        assert "could not start a worker container" in result.detail
        assert "memory" in result.detail.lower()
    finally:
        backend.close()


def test_each_slot_has_its_own_tmpfs_and_jobs_cannot_reach_the_slot_cgroups(
    docker_backend: Any,
) -> None:
    result = docker_backend.run(ExecRequest(code="""
import os
print(os.getcwd().rsplit("/", 1)[0], oct(os.stat("..").st_mode & 0o7777))
for path in ("/run/rlhub-cg", "/work/s1"):
    try:
        os.listdir(path)
        print("listed", path)
    except OSError as exc:
        print("refused", path, exc.errno)
"""))
    assert result.status == "ok", result
    lines = result.stdout.splitlines()
    assert lines[0].startswith("/work/s") and lines[0].endswith(" 0o710"), lines
    assert lines[1:] == ["refused /run/rlhub-cg 13", "refused /work/s1 13"], lines
    tmpfs = container_of(docker_backend).attrs["HostConfig"]["Tmpfs"]
    sizes = {path: opts.split(",")[0] for path, opts in tmpfs.items() if path.startswith("/work/s")}
    assert sizes == {f"/work/s{k}": f"size={docker_backend.disk_mb}m"
                     for k in range(docker_backend.slots)}


def test_requests_beyond_what_a_slot_holds_are_refused_with_the_option_to_change(
    docker_backend: Any,
) -> None:
    many = docker_backend.run(ExecRequest(code="pass", limits=Limits(processes=10_000)))
    assert many.status == "infra_error" and "limits.processes: expected at most" in many.detail
    assert "pids=" in many.detail
    big = docker_backend.run(ExecRequest(code="pass", limits=Limits(disk_mb=1024)))
    assert big.status == "infra_error" and "start the backend with disk_mb=1024" in big.detail
