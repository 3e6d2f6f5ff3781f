"""Every path a user names for briefkit to read on this machine is read under one rule
(briefkit.core.reads): a power source's ``password_file`` (through `briefkit measure` and through
`dvc exp run -S`), the files and folders of `briefkit import`, its ``--map`` and an external meter's log
(tests/power/test_power.py). /etc/shadow is tried through each, named directly and through a link inside
the checkout; it is refused, a FIFO is refused at once by name, and nothing of a refused file is printed.
A mapping file inside the checkout that is wrong is reported by file, line and problem, quoting at most
a key, cut short."""
from __future__ import annotations

import io
import os
import socket
import subprocess
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from briefkit import cli
from briefkit.core.reads import ReadRefused, ReadRule
from briefkit.measure import imported
from briefkit.power import from_config
from tests.checkouts import BIN, ROOT, run
from tests.fio_rates import NO_CALIBRATION

SHADOW = Path("/etc/shadow")
BRIEF = "reads-test"


def shadow_lines() -> list[str]:
    lines = [line for line in SHADOW.read_text().splitlines() if len(line) > 8]
    assert lines, "/etc/shadow is empty here"
    return lines


def shows_shadow(text: str) -> list[str]:
    """The lines of /etc/shadow that ``text`` holds, and its long fields (password hashes)."""
    found = [line for line in shadow_lines() if line in text]
    fields = {f for line in shadow_lines() for f in line.split(":") if len(f) >= 12}
    return found + [f for f in fields if f in text]


class SilentBmc:
    """A TCP port that notes every connection made to it (a BMC that must never be contacted)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.connections = 0
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stopped = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def bmc():
    server = SilentBmc()
    yield server
    server.close()


def briefkit(*argv) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue() + err.getvalue()


def campaign(work: Path, password_file: str, url: str) -> dict:
    return {"workload": "fio", "host": "local", "workdir": str(work), "repetitions": 1,
            "configs": {"d": {"kind": "dir", "path": str(work / "disk")}},
            "matrix": {"rw": ["read"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
            "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "1MiB",
                         "options": dict(NO_CALIBRATION)},
            "power": {"kind": "redfish", "url": url, "chassis": "1U", "username": "x", "password_file": password_file,
                      "resource": "power"}}


# --- password_file ------------------------------------------------------------------------------

def test_a_password_file_is_read_only_from_a_secrets_folder(tmp_path, bmc):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "shadow-link").symlink_to(SHADOW)
    secrets = tmp_path / "briefkit-secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "shadow-link").symlink_to(SHADOW)     # a link in the secrets folder is judged by where it leads
    reads = ReadRule(folders=(checkout,), secret_folders=(secrets,))
    for path in (SHADOW, checkout / "shadow-link", secrets / "shadow-link"):
        params = {"kind": "redfish", "url": bmc.url, "chassis": "1U", "username": "x", "password_file": str(path)}
        with pytest.raises(ReadRefused, match=rf"power.password_file: {path}: .*lies outside the secrets folders") \
                as refused:
            from_config(params, reads=reads)
        assert shows_shadow(str(refused.value)) == []
    assert bmc.connections == 0


@pytest.mark.parametrize("through", ["named", "link"])
def test_briefkit_measure_refuses_etc_shadow_as_password_file(root, tmp_path, bmc, through):
    secrets = tmp_path / "briefkit-secrets"
    secrets.mkdir(mode=0o700)
    path = SHADOW if through == "named" else root / "bmc-password"
    if through == "link":
        path.symlink_to(SHADOW)
    spec = campaign(tmp_path / "work", str(path), bmc.url)
    (root / "params.yaml").write_text(yaml.safe_dump({"secret_folders": [str(secrets)],
                                                      "briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    code, said = briefkit("measure", BRIEF, "--campaign", "c")
    assert code != 0
    assert f"power.password_file: {path}: " in said and "lies outside the secrets folders" in said, said
    assert "Traceback" not in said and shows_shadow(said) == []
    assert bmc.connections == 0, "the BMC was contacted"
    assert not list((root / "data/raw" / BRIEF / "c").rglob("point.json")), "a point ran"


def keys_folder(home: Path) -> Path:
    """A user's ~/.ssh as ssh-keygen leaves it: the folder chmod 700, a private key chmod 600, which the
    ownership and mode checks alone would accept as a secrets folder and a password file."""
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, mode=0o700)
    (ssh / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n")
    (ssh / "id_ed25519").chmod(0o600)
    return ssh


@pytest.mark.parametrize("named", ["ssh", "home", "link"])
def test_secret_folders_naming_a_folder_of_other_keys_is_refused_naming_the_key(root, tmp_path_factory, bmc, named):
    """params.yaml (a colleague's commit, a `dvc exp run -S`) names ~/.ssh, the home folder, or a link
    named like a secrets folder that leads to ~/.ssh: refused before anything runs, naming the key."""
    home = tmp_path_factory.mktemp("home")
    ssh = keys_folder(home)
    folder = {"ssh": ssh, "home": home, "link": home / "briefkit-keys"}[named]
    if named == "link":
        folder.symlink_to(ssh)
    spec = campaign(tmp_path_factory.mktemp("work"), str(ssh / "id_ed25519"), bmc.url)
    (root / "params.yaml").write_text(yaml.safe_dump({"secret_folders": [str(folder)],
                                                      "briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    for argv in (("list",), ("measure", BRIEF, "--campaign", "c")):
        code, said = briefkit(*argv)
        assert code == 2, said
        assert f"params.yaml: secret_folders[0]: {folder} " in said and "named `briefkit` or `briefkit-NAME`" in said
        assert "Traceback" not in said and "not-a-real-key" not in said
    assert bmc.connections == 0, "the BMC was contacted"


def test_a_secrets_folder_inside_the_checkout_is_refused(tmp_path):
    checkout = tmp_path / "checkout"
    secrets = checkout / "briefkit"
    secrets.mkdir(parents=True, mode=0o700)
    (secrets / "bmc").write_text("pw\n")
    (secrets / "bmc").chmod(0o600)
    reads = ReadRule(folders=(checkout,), secret_folders=(secrets,))
    with pytest.raises(ReadRefused, match=r"the secrets folder .* lies inside the checkout"):
        reads.read_bytes(secrets / "bmc", "power.password_file", secret=True)
    # the same folder outside the checkout is read
    outside = tmp_path / "briefkit"
    secrets.rename(outside)
    assert ReadRule(folders=(checkout,), secret_folders=(outside,)).read_bytes(outside / "bmc", "p", secret=True) == b"pw\n"


@pytest.mark.slow
def test_dvc_exp_run_s_cannot_make_a_password_of_etc_shadow(tmp_path, bmc):
    clone = tmp_path / "briefkit"
    run(["git", "clone", "-q", str(ROOT), str(clone)], cwd=ROOT)
    for key, value in (("user.email", "test@example.invalid"), ("user.name", "test")):
        run(["git", "config", key, value], cwd=clone)
    secrets = tmp_path / "briefkit-secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "bmc").write_text("not-the-shadow\n")
    (secrets / "bmc").chmod(0o600)
    params = yaml.safe_load((clone / "params.yaml").read_text())
    params["secret_folders"] = [str(secrets)]
    for name in ("named", "linked"):
        params["briefs"]["fio-6600ion"]["campaigns"][name] = campaign(tmp_path / name, str(secrets / "bmc"), bmc.url)
        params["measure"][f"fio-6600ion--{name}"] = {"brief": "fio-6600ion", "campaign": name}
    (clone / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["git", "add", "-A"], cwd=clone)
    run(["git", "commit", "-qm", "two campaigns with a power source"], cwd=clone)
    run(["git", "config", "gc.auto", "50000"], cwd=clone)
    (clone / "bmc-link").symlink_to(SHADOW)       # a link inside the checkout
    tried = {"named": SHADOW, "linked": clone / "bmc-link"}
    # one experiment, both stages (-k: the second runs after the first fails)
    overrides = [word for name, path in tried.items()
                 for word in ("-S", f"briefs.fio-6600ion.campaigns.{name}.power.password_file={path}")]
    done = run([str(BIN / "dvc"), "exp", "run", "-k", *overrides, *(f"measure@fio-6600ion--{name}" for name in tried)],
               cwd=clone, check=False, timeout=600)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-3000:]
    for name, path in tried.items():
        assert f"power.password_file: {path}: " in said, said[-3000:]
        assert not list((clone / "data/raw/fio-6600ion" / name).rglob("point.json")), "a point ran"
    assert said.count("lies outside the secrets folders") >= 2 and shows_shadow(said) == []
    assert bmc.connections == 0, "the BMC was contacted"


# --- briefkit import ------------------------------------------------------------------------------

@pytest.fixture
def checkout(root):
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb"}}}))
    return root


def test_import_refuses_etc_shadow_named_linked_or_in_a_folder(checkout):
    (checkout / "shadow.json").symlink_to(SHADOW)
    folder = checkout / "results"
    folder.mkdir()
    (folder / "run.json").symlink_to(SHADOW)
    for argument, shown in ((SHADOW, SHADOW), (checkout / "shadow.json", checkout / "shadow.json"),
                            (folder, folder / "run.json")):
        code, said = briefkit("import", BRIEF, "lab", argument)
        assert code != 0
        assert f"import: {shown}: " in said and "lies outside the folders briefkit reads from" in said, said
        assert "Traceback" not in said and shows_shadow(said) == []
    assert not (checkout / "data/raw" / BRIEF / "lab").exists()


def test_import_refuses_a_fifo_at_once_by_name(checkout):
    fifo = checkout / "results.json"
    os.mkfifo(fifo)
    folder = checkout / "results"
    folder.mkdir()
    os.mkfifo(folder / "run.json")
    for argument, shown in ((fifo, fifo), (folder, folder / "run.json")):
        # in a child with a deadline: a FIFO that is opened waits for a writer for ever
        done = subprocess.run([str(BIN / "briefkit"), "import", BRIEF, "lab", str(argument)], cwd=checkout,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert f"import: {shown}: is a FIFO (named pipe), not a file: refused" in done.stderr, done.stderr


def test_import_map_refuses_etc_shadow_and_never_prints_it(checkout):
    data = checkout / "results"
    data.mkdir()
    (data / "run.json").write_text("{}")
    (checkout / "map.yaml").symlink_to(SHADOW)
    for mapping in (SHADOW, checkout / "map.yaml"):
        code, said = briefkit("import", BRIEF, "lab", data, "--map", mapping)
        assert code != 0
        assert f"the mapping file (--map): {mapping}: " in said and "lies outside" in said, said
        assert shows_shadow(said) == []


def test_a_bad_mapping_file_is_reported_by_line_never_by_its_lines(checkout):
    data = checkout / "results"
    data.mkdir()
    (data / "run.json").write_text("{}")
    mapping = checkout / "map.yaml"
    secret_line = "root:$y$j9T$SECRETHASHSECRETHASH:19000:0:99999:7:::"
    cases = {
        # text that is no mapping (a copy of a password file): its lines are not shown
        "\n".join([secret_line] * 5) + "\n": r"map.yaml:1: <a key that is not a plain word>: unknown key \(known: "
                                             r"files, labels\)",
        secret_line.rstrip(":") + "\n": (r"map.yaml:1: the mapping file must be a mapping with the keys files and "
                                         r"labels; it holds text"),
        # an unknown key: the key, cut short, and its line
        "files:\n  - match: '*.json'\n    " + "K" * 80 + ": '" + secret_line + "'\n":
            r"map.yaml:3: files\[0\]\.K{40}\.\.\.: unknown key \(known: match, config, host, matrix, tool\)",
        # a value of the wrong type: the line and the key path, not the value
        "files:\n  - match: '*.json'\n    matrix: '" + secret_line + "'\n":
            r"map.yaml:3: files\[0\]\.matrix: Input should be a valid dictionary",
        "files:\n  - match: '*.json'\n    tool: '" + secret_line + "'\n":
            r"map.yaml:2: files\[0\]\.tool: not a tool briefkit knows",
        # not YAML: the line and the parser's problem
        "files:\n  - match: '*.json'\n   bad: [" + secret_line + "\n": r"map.yaml:3: the mapping file is not valid YAML",
    }
    for text, expected in cases.items():
        mapping.write_text(text)
        with pytest.raises(imported.CampaignError, match=expected) as refused:
            imported.import_campaign(BRIEF, "lab", [data], mapping_path=mapping, base=checkout)
        message = str(refused.value)
        assert "SECRETHASH" not in message and "19000" not in message, message
        assert len(message) < 400, message


def test_devices_and_sockets_are_refused_unopened(tmp_path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    (tmp_path / "null").symlink_to("/dev/null")
    rule = ReadRule(folders=(tmp_path, Path("/dev")))
    try:
        for path, kind in ((Path("/dev/null"), "a character device"), (tmp_path / "null", "a character device"),
                           (tmp_path / "sock", "a socket")):
            with pytest.raises(ReadRefused, match=rf"x: {path}: .*is {kind}, not a file: refused"):
                rule.read_bytes(path, "x")
    finally:
        server.close()
