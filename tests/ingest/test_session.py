"""The Spark session listens on loopback only (before, the driver and block manager
listened on the machine's external address, with no authentication)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest

from ingest.errors import IngestError, SparkUnavailable
from ingest.extract import landing_folder
from ingest.session import check_master, on_loopback, spark_bind_settings, standalone_masters
from ingest.standalone import free_port

pytestmark = pytest.mark.spark


def _listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state owned by process ``pid``."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            address_hex, port_hex = local.split(":")
            raw = bytes.fromhex(address_hex)
            # /proc shows each 32-bit word in host (little-endian) order
            words = [raw[k : k + 4][::-1] for k in range(0, width, 4)]
            address = ipaddress.ip_address(b"".join(words))
            found.append((str(address), int(port_hex, 16)))
    return found


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool((mapped or ip).is_loopback)


def test_spark_driver_and_block_manager_listen_on_loopback_only(spark) -> None:  # type: ignore[no-untyped-def]
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    jvm = spark.sparkContext._jvm
    pid = int(jvm.ProcessHandle.current().pid())
    sockets = _listening_sockets(pid)
    driver_port = int(conf.get("spark.driver.port"))
    assert driver_port in {port for _, port in sockets}
    exposed = [(a, p) for a, p in sockets if not _is_loopback(a)]
    assert exposed == [], f"the Spark JVM listens beyond loopback: {exposed}"


def test_bind_settings_leave_clusters_and_explicit_choices_alone() -> None:
    local = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    assert spark_bind_settings("local[*]", {}) == local
    assert spark_bind_settings("local[2]", {"PATH": "/bin"}) == local
    assert spark_bind_settings("spark://cluster:7077", {}) == {}
    assert spark_bind_settings("spark://127.0.0.1:7077", {}) == local  # workers are local too
    assert spark_bind_settings("spark://localhost:7077,127.0.0.1:7078", {}) == local
    assert spark_bind_settings("spark://127.0.0.1:7077,cluster:7077", {}) == {}
    assert spark_bind_settings("yarn", {}) == {}
    assert spark_bind_settings("local[*]", {"SPARK_LOCAL_IP": "10.0.0.5"}) == {}
    assert spark_bind_settings("local[*]", {"MACE_SPARK_DRIVER_HOST": "10.0.0.5"}) == {
        "spark.driver.host": "10.0.0.5",
        "spark.driver.bindAddress": "10.0.0.5",
    }
    submit = {"PYSPARK_SUBMIT_ARGS": "--conf spark.driver.host=h pyspark-shell"}
    assert spark_bind_settings("local[*]", submit) == {}


def test_local_spark_jvm_runs_at_lower_cpu_priority(spark) -> None:  # type: ignore[no-untyped-def]
    """Ingestion beside the dashboard must yield the CPU to the pages:
    every JVM thread, including task threads started after the session, is reniced,
    while this (the serving) process keeps its priority."""
    import os

    from ingest.session import SPARK_NICE

    pid = spark.sparkContext._gateway.proc.pid
    spark.range(200_000).selectExpr("sum(id)").collect()  # start executor task threads
    nices = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            nices.add(os.getpriority(os.PRIO_PROCESS, int(tid)))
        except OSError:
            continue  # the thread ended meanwhile
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert nices == {min(19, ours + SPARK_NICE)}


def test_standalone_master_urls() -> None:
    assert standalone_masters("spark://h1:7077,h2:7078") == [("h1", 7077), ("h2", 7078)]
    assert standalone_masters("spark://h1") == [("h1", 7077)]
    assert standalone_masters("local[*]") == standalone_masters("yarn") == []
    assert on_loopback("local[2]") and on_loopback("spark://localhost:7077")
    assert not on_loopback("spark://10.0.0.5:7077") and not on_loopback("yarn")


def test_an_unreachable_master_is_one_line_at_once() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(SparkUnavailable, match=f"127.0.0.1:{port} is unreachable") as caught:
        check_master(f"spark://127.0.0.1:{port}", timeout=1)
    assert "\n" not in str(caught.value)
    check_master("local[*]")  # nothing to probe


def test_a_landing_uri_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="a URI is not supported"):
        landing_folder("s3a://bucket/landing")
    with pytest.raises(IngestError, match="does not exist"):
        landing_folder(tmp_path / "missing")
    assert landing_folder(tmp_path) == tmp_path
