"""``kind: nvmeof``: the plan of commands for tcp and rdma (target through configfs, initiator through
nvme-cli), nvme-cli's own argument parser accepting what the plan gives it, ``briefkit measure
--dry-run`` showing the plan, validation naming its key, and the real end-to-end set-up over NVMe/TCP
on the loopback, which needs the nvmet, nvmet_tcp and nvme_tcp kernel modules (skipped where they
are missing, saying which)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from briefkit.hosts import LocalHost
from briefkit.storage import StorageError, from_spec
from briefkit.storage.nvmeof import CONFIGFS

WHERE = "briefs.b.campaigns.c.configs"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")
NQN = "nqn.2014-08.org.example:ssd1"


def tcp_config(**extra):
    return from_spec("nvme-tcp", {"kind": "nvmeof", "transport": "tcp", "address": "127.0.0.1",
                                  "target": {"device": "/dev/nvme1n1", "destroy_data": True}, **extra},
                     f"{WHERE}.nvme-tcp")


def rdma_config(**extra):
    return from_spec("nvme-rdma", {"kind": "nvmeof", "transport": "rdma", "address": "192.168.20.2", "port": 4421,
                                   "nqn": NQN, "destroy_data": True, **extra}, f"{WHERE}.nvme-rdma")


# -- the plan -------------------------------------------------------------------------------------

def test_tcp_plan_configures_nvmet_then_connects_and_undoes_it_in_reverse():
    config = tcp_config(mount_options="noatime")
    nqn = "nqn.2014-08.org.briefkit:nvme-tcp"
    sub, port = f"{CONFIGFS}/subsystems/{nqn}", f"{CONFIGFS}/ports/4420"
    target = [s.line() for s in config.target_steps()]
    assert target == [
        "target: modprobe nvmet", "target: modprobe nvmet-tcp", f"target: mkdir -- {sub}",
        f"target: echo -n 1 > {sub}/attr_allow_any_host", f"target: mkdir -- {sub}/namespaces/1",
        f"target: echo -n /dev/nvme1n1 > {sub}/namespaces/1/device_path",
        f"target: echo -n 1 > {sub}/namespaces/1/enable", f"target: mkdir -- {port}",
        f"target: echo -n tcp > {port}/addr_trtype", f"target: echo -n ipv4 > {port}/addr_adrfam",
        f"target: echo -n 127.0.0.1 > {port}/addr_traddr", f"target: echo -n 4420 > {port}/addr_trsvcid",
        f"target: ln -s -- {sub} {port}/subsystems/{nqn}"]
    assert config.connect_argv() == ["nvme", "connect", "--transport", "tcp", "--traddr", "127.0.0.1",
                                     "--trsvcid", "4420", "--nqn", nqn]
    initiator = [s.line() for s in config.initiator_steps("/w")]
    assert initiator[0] == "initiator: modprobe nvme-tcp" and "whose subsysnqn is " + nqn in initiator[2]
    assert initiator[-1] == "initiator: mount -t xfs -o noatime <namespace> /w/storage/nvme-tcp/mnt"
    down = [s.line() for s in config.teardown_steps("/w")]
    assert down == [
        "initiator: umount -- /w/storage/nvme-tcp/mnt", f"initiator: nvme disconnect --nqn {nqn}",
        f"target: rm -f -- {port}/subsystems/{nqn}", f"target: rmdir -- {port}",
        f"target: echo -n 0 > {sub}/namespaces/1/enable", f"target: rmdir -- {sub}/namespaces/1",
        f"target: rmdir -- {sub}"]
    # what setup makes, teardown removes: every mkdir and ln of the target has its rmdir or rm
    made = {s.argv[-1] for s in config.target_steps() if s.argv[0] in ("mkdir", "ln")}
    removed = {s.argv[-1] for s in config.teardown_steps("/w") if s.argv[0] in ("rmdir", "rm")}
    assert made == removed


def test_rdma_plan_for_an_existing_target_touches_no_target():
    config = rdma_config(filesystem="none", nr_io_queues=8, queue_size=256)
    assert config.target_steps() == []
    assert config.connect_argv() == ["nvme", "connect", "--transport", "rdma", "--traddr", "192.168.20.2",
                                     "--trsvcid", "4421", "--nqn", NQN, "--nr-io-queues", "8", "--queue-size", "256"]
    assert [s.side for s in config.initiator_steps("/w") + config.teardown_steps("/w")] == ["initiator"] * 4
    assert [s.line() for s in config.teardown_steps("/w")] == [f"initiator: nvme disconnect --nqn {NQN}"]
    assert config.plan("/w")[0] == f"rdma to 192.168.20.2:4421 {NQN}; target existing"


def test_ipv6_address_sets_the_address_family():
    config = from_spec("v6", {"kind": "nvmeof", "transport": "tcp", "address": "fd00::2",
                              "target": {"device": "/dev/sdb", "port_id": 7}})
    lines = [s.line() for s in config.target_steps()]
    assert f"target: echo -n ipv6 > {CONFIGFS}/ports/7/addr_adrfam" in lines
    assert f"target: echo -n fd00::2 > {CONFIGFS}/ports/7/addr_traddr" in lines


@pytest.mark.skipif(not shutil.which("nvme"), reason="nvme-cli is not installed")
@pytest.mark.parametrize("make", [tcp_config, rdma_config], ids=["tcp", "rdma"])
def test_nvme_cli_parses_the_plans_arguments(make):
    """nvme-cli parses its options before it touches the fabric: an option it does not know ends in
    'unrecognized option' and its usage; options it knows get as far as the missing fabric."""
    bad = subprocess.run(["nvme", "connect", "--transport", "tcp", "--no-such-option", "1"], capture_output=True,
                         text=True, timeout=30)
    assert "unrecognized option" in bad.stdout + bad.stderr            # the check below can fail
    config = make(nr_io_queues=4, queue_size=64)
    for argv in (config.connect_argv(), ["nvme", "disconnect", "--nqn", config.subsystem_nqn]):
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        said = res.stdout + res.stderr
        assert "unrecognized option" not in said and "Usage:" not in said, (argv, said)
    shown = subprocess.run(["nvme", "connect", "--help"], capture_output=True, text=True)
    help_text = shown.stdout + shown.stderr
    for option in (a for a in config.connect_argv() if a.startswith("--")):
        assert f"{option}=" in help_text, option


# -- validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,key,words", [
    ({"transport": "fc", "address": "10.0.0.1", "nqn": NQN}, "transport", "tcp"),
    ({"transport": "tcp", "address": "storage; reboot", "nqn": NQN}, "address", "not an IP address"),
    ({"transport": "tcp", "address": "10.0.0.1"}, "nqn", "existing target"),
    ({"transport": "tcp", "address": "10.0.0.1", "nqn": "nqn.x; rm -rf /"}, "nqn", "not an NQN"),
    ({"transport": "tcp", "address": "10.0.0.1", "target": {"device": "/etc/passwd"}}, "target.device", "/dev"),
    ({"transport": "tcp", "address": "10.0.0.1", "target": {"device": "/dev/sdb", "host": "storage"}},
     "target.host", "SSH address"),
    ({"transport": "tcp", "address": "10.0.0.1", "target": {"device": "/dev/sdb"}, "destroy_data": True},
     "destroy_data", "target.destroy_data"),
    ({"transport": "tcp", "address": "10.0.0.1", "nqn": NQN, "queue_size": 4}, "queue_size", "16"),
])
def test_bad_values_name_their_key(spec, key, words):
    with pytest.raises(StorageError) as err:
        from_spec("n", {"kind": "nvmeof", **spec}, f"{WHERE}.n")
    assert f"{WHERE}.n.{key}" in str(err.value) and words in str(err.value), str(err.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="runs commands as another uid with setpriv: needs root")
def test_without_root_the_message_says_so(tmp_path):
    class Unprivileged(LocalHost):
        """This machine, every command run as nobody (a real restriction)."""

        def run(self, argv, timeout=None, check=True, cwd=None, env=None):
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *argv]
            return super().run(argv, timeout=timeout, check=check, cwd=cwd, env=env)

    with pytest.raises(StorageError, match=r"configs\.nvme-rdma: .*uid 65534.*nvmeof .*needs root .*log in as "
                                           r"root .*sudo: true") as err:
        rdma_config().setup(Unprivileged(name="nobody"), str(tmp_path / "work"))
    # its own commands, not loop_xfs's
    assert "kind nvmeof (modprobe, nvme, configfs writes)" in str(err.value)
    assert "losetup" not in str(err.value) and "mkfs" not in str(err.value)


# -- briefkit measure --dry-run ------------------------------------------------------------------

@pytest.mark.slow
def test_dry_run_shows_the_plan(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    configs = {"nvme-tcp": {"kind": "nvmeof", "transport": "tcp", "address": "127.0.0.1",
                            "target": {"device": "/dev/nvme1n1", "destroy_data": True}},
               "nvme-rdma": {"kind": "nvmeof", "transport": "rdma", "address": "192.168.20.2", "nqn": NQN,
                             "destroy_data": True}}
    spec = {"workload": "fio", "host": "local", "workdir": str(tmp_path / "work"), "repetitions": 1,
            "configs": configs, "matrix": {"rw": ["randread"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
            "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "4MiB"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"briefs": {"b": {"notebook": "nb",
                                                                           "campaigns": {"c": spec}}}}))
    res = subprocess.run([BRIEFKIT, "measure", "b", "--campaign", "c", "--dry-run"], capture_output=True, text=True,
                         env={**os.environ, "BRIEFKIT_ROOT": str(tmp_path)}, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    tcp = [line.split(" storage: ", 1)[1] for line in lines if line.startswith("# c/nvme-tcp storage: ")]
    rdma = [line.split(" storage: ", 1)[1] for line in lines if line.startswith("# c/nvme-rdma storage: ")]
    assert tcp == from_spec("nvme-tcp", configs["nvme-tcp"]).plan(str(tmp_path / "work"))
    assert "initiator: nvme connect --transport tcp --traddr 127.0.0.1 --trsvcid 4420 " \
           "--nqn nqn.2014-08.org.briefkit:nvme-tcp" in tcp
    assert f"initiator: nvme connect --transport rdma --traddr 192.168.20.2 --trsvcid 4420 --nqn {NQN}" in rdma
    assert not any("target:" in line for line in rdma)
    assert not (tmp_path / "work").exists()        # nothing ran


# -- end to end -----------------------------------------------------------------------------------

MODULES = ("nvmet", "nvmet_tcp", "nvme_tcp", "nvme_fabrics")
_missing = [m for m in MODULES if not Path("/sys/module", m).exists()]


@pytest.mark.skipif(bool(_missing) or os.geteuid() != 0,
                    reason=f"NVMe/TCP end to end needs root and the kernel modules {', '.join(MODULES)}; "
                           f"missing here: {', '.join(_missing) or 'none'} (modprobe nvmet nvmet-tcp nvme-tcp)")
def test_nvme_tcp_over_the_loopback_end_to_end(tmp_path, local_host):
    """nvmet exports a loop device of the test's own; the initiator connects over 127.0.0.1, finds the
    namespace by its NQN, makes XFS and mounts it; teardown leaves no subsystem, port or connection."""
    image = tmp_path / "drive"
    subprocess.run(["truncate", "-s", "512M", str(image)], check=True)
    drive = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                           check=True).stdout.strip()
    try:
        config = from_spec("e2e", {"kind": "nvmeof", "transport": "tcp", "address": "127.0.0.1", "port": 4499,
                                   "target": {"device": drive, "destroy_data": True}})
        prepared = config.setup(local_host, str(tmp_path / "work"))
        assert prepared.device.startswith("/dev/nvme") and Path(prepared.path).is_mount()
        Path(prepared.path, "data").write_text("over the fabric")
        config.teardown(local_host, prepared)
        assert not Path(CONFIGFS, "subsystems", config.subsystem_nqn).exists()
        assert not Path(CONFIGFS, "ports", "4499").exists()
        subsystems = Path("/sys/class/nvme-subsystem")
        assert not any((s / "subsysnqn").read_text().strip() == config.subsystem_nqn
                       for s in (subsystems.iterdir() if subsystems.exists() else []))
    finally:
        subprocess.run(["losetup", "-d", drive], check=False)


@pytest.mark.parametrize("key", ["host", "known_hosts", "device"])
@pytest.mark.parametrize("value", ["x; touch /tmp/briefkit-pwned", "$(touch /tmp/briefkit-pwned)", "/dev/../etc/x",
                                   "/dev/sdb\n", "-oProxyCommand=touch /tmp/briefkit-pwned"])
def test_target_fields_refuse_injection(key, value):
    """The nested target (which the security suite's walk of top-level fields does not reach)."""
    target = {"device": "/dev/sdb", key: value}
    with pytest.raises(StorageError, match=rf"{WHERE}\.n\.target\.{key}"):
        from_spec("n", {"kind": "nvmeof", "transport": "tcp", "address": "10.0.0.2", "target": target}, f"{WHERE}.n")
    with pytest.raises(StorageError, match=rf"{WHERE}\.n\.target\.client_keys"):
        from_spec("n", {"kind": "nvmeof", "transport": "tcp", "address": "10.0.0.2",
                        "target": {"device": "/dev/sdb", "client_keys": [value]}}, f"{WHERE}.n")
