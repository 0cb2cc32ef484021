"""The subcommands and flags the real eksctl, gcloud, kubectl and aws document, for the
commands kary runs: the fakes refuse anything else the way the real tools do.

Each entry is a command path, the positional arguments it takes, and its flags as
its reference page lists them (a flag -> True when it takes a value), plus each
tool's global flags.  Only the commands kary runs are listed: a command kary does
not run is an unknown one here, so a new call in kary fails its tests until it is
checked against the tool's reference and added.  Versions: eksctl 0.210 (the
eksctl.io/v1alpha5 schema kary's cluster files use), Google Cloud SDK 520,
kubectl 1.33, AWS CLI 2.27.

References (one page per command):
- eksctl: https://eksctl.io/usage/creating-and-managing-clusters/ and
  `eksctl <verb> <noun> --help` (create cluster, delete cluster, utils write-kubeconfig)
- gcloud: https://cloud.google.com/sdk/gcloud/reference/ + the command path, e.g.
  .../container/clusters/create, .../scheduler/jobs/create/http,
  .../services/list, .../projects/get-iam-policy; global flags:
  https://cloud.google.com/sdk/gcloud/reference#--account
- kubectl: https://kubernetes.io/docs/reference/kubectl/generated/ (kubectl_apply,
  kubectl_rollout/kubectl_rollout_status, kubectl_version) and kubectl_options
- aws: https://docs.aws.amazon.com/cli/latest/reference/eks/get-token.html and the
  global options on https://docs.aws.amazon.com/cli/latest/reference/
"""

from __future__ import annotations


class Spec:
    """A command's positional count and its flags (flag -> takes a value).

    A plain class, not a dataclass: every fake CLI call imports this module, and
    `dataclasses` (with the `inspect` it loads) was a third of such a call's start.
    """

    __slots__ = ("flags", "positionals")

    def __init__(self, positionals: int = 0, flags: dict[str, bool] | None = None) -> None:
        self.positionals = positionals
        self.flags = flags if flags is not None else {}


_GCLOUD_LIST = {"--filter": True, "--limit": True, "--page-size": True, "--sort-by": True}
_GCLOUD_LIST_URI = {**_GCLOUD_LIST, "--uri": False}
_GKE_WHERE = {"--zone": True, "-z": True, "--region": True, "--location": True}

COMMANDS: dict[str, dict[tuple[str, ...], Spec]] = {
    "eksctl": {
        ("create", "cluster"): Spec(
            0,
            {
                "-f": True, "--config-file": True, "-n": True, "--name": True,
                "-r": True, "--region": True, "--dry-run": False, "--timeout": True,
                "--profile": True, "--kubeconfig": True, "--write-kubeconfig": False,
                "--auto-kubeconfig": False, "--set-kubeconfig-context": False,
            },
        ),
        ("delete", "cluster"): Spec(
            0,
            {
                "-n": True, "--name": True, "-r": True, "--region": True, "-w": False,
                "--wait": False, "--force": False, "--disable-nodegroup-eviction": False,
                "--parallel": True, "-f": True, "--config-file": True, "--profile": True,
                "--timeout": True,
            },
        ),
        ("utils", "write-kubeconfig"): Spec(
            0,
            {
                "-c": True, "--cluster": True, "-r": True, "--region": True,
                "--kubeconfig": True, "--set-kubeconfig-context": False,
                "--auto-kubeconfig": False, "--authenticator-role-arn": True,
                "--profile": True, "--timeout": True,
            },
        ),
    },
    "gcloud": {
        ("config", "get-value"): Spec(1, {}),
        ("projects", "describe"): Spec(1, {}),
        ("projects", "get-iam-policy"): Spec(1, _GCLOUD_LIST),
        ("services", "list"): Spec(0, {"--available": False, "--enabled": False, **_GCLOUD_LIST}),
        ("container", "clusters", "create"): Spec(
            1,
            {
                "--zone": True, "-z": True, "--region": True, "--location": True,
                "--num-nodes": True, "--machine-type": True, "-m": True,
                "--placement-type": True, "--placement-policy": True,
                "--threads-per-core": True, "--enable-gvnic": False, "--network": True,
                "--subnetwork": True, "--cluster-version": True, "--labels": True,
                "--node-labels": True, "--node-taints": True, "--async": False,
                "--disk-size": True, "--disk-type": True, "--spot": False,
            },
        ),
        ("container", "clusters", "delete"): Spec(
            1, {"--zone": True, "-z": True, "--region": True, "--location": True, "--async": False}
        ),
        ("container", "clusters", "describe"): Spec(
            1, {"--zone": True, "-z": True, "--region": True, "--location": True}
        ),
        ("container", "clusters", "get-credentials"): Spec(
            1,
            {
                "--zone": True, "-z": True, "--region": True, "--location": True,
                "--internal-ip": False, "--dns-endpoint": False,
            },
        ),
        ("container", "clusters", "list"): Spec(
            0, {**_GKE_WHERE, **_GCLOUD_LIST_URI}
        ),
        ("scheduler", "jobs", "create", "http"): Spec(
            1,
            {
                "--location": True, "--schedule": True, "--time-zone": True, "--uri": True,
                "--http-method": True, "--message-body": True, "--message-body-from-file": True,
                "--headers": True, "--oauth-service-account-email": True,
                "--oauth-token-scope": True, "--oidc-service-account-email": True,
                "--oidc-token-audience": True, "--description": True, "--attempt-deadline": True,
                "--max-retry-attempts": True, "--max-retry-duration": True,
                "--min-backoff": True, "--max-backoff": True, "--max-doublings": True,
            },
        ),
        ("scheduler", "jobs", "describe"): Spec(1, {"--location": True}),
        ("scheduler", "jobs", "delete"): Spec(1, {"--location": True}),
    },
    "kubectl": {
        ("apply",): Spec(
            0,
            {
                "-f": True, "--filename": True, "-k": True, "--kustomize": True,
                "--server-side": False, "--force-conflicts": False, "--dry-run": True,
                "--field-manager": True, "-o": True, "--output": True, "--wait": False,
                "--timeout": True, "--validate": True, "--prune": False, "-l": True,
                "--selector": True,
            },
        ),
        ("rollout", "status"): Spec(
            1,
            {
                "--timeout": True, "-w": False, "--watch": False, "--revision": True,
                "-f": True, "--filename": True, "-l": True, "--selector": True,
            },
        ),
        ("version",): Spec(0, {"--client": False, "-o": True, "--output": True}),
        # kubectl_set_image: set image (-f FILENAME | TYPE NAME) CONTAINER=IMAGE ...
        ("set", "image"): Spec(
            2,
            {
                "--all": False, "--dry-run": True, "-f": True, "--filename": True,
                "-l": True, "--selector": True, "--local": False, "-o": True, "--output": True,
            },
        ),
    },
    "aws": {
        # The kubeconfig eksctl writes runs this; kary itself never calls aws.
        ("eks", "get-token"): Spec(
            0, {"--cluster-name": True, "--role-arn": True, "--cluster-id": True}
        ),
    },
}  # fmt: skip

GLOBAL_FLAGS: dict[str, dict[str, bool]] = {
    "eksctl": {"-C": True, "--color": True, "-h": False, "--help": False, "-v": True,
               "--verbose": True},
    "gcloud": {
        "--account": True, "--billing-project": True, "--configuration": True,
        "--flags-file": True, "--flatten": True, "--format": True, "--help": False,
        "--impersonate-service-account": True, "--log-http": False, "--project": True,
        "--quiet": False, "-q": False, "--trace-token": True, "--user-output-enabled": True,
        "--verbosity": True,
    },
    "kubectl": {"-n": True, "--namespace": True, "--context": True, "--kubeconfig": True,
                "--cluster": True, "--user": True, "--request-timeout": True, "-v": True,
                "-s": True, "--server": True},
    "aws": {"--region": True, "--output": True, "--profile": True, "--debug": False,
            "--endpoint-url": True, "--no-cli-pager": False, "--query": True},
}  # fmt: skip


class Refused(Exception):
    """What the real tool prints, and its exit status, for a call it does not accept."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _refuse(prog: str, path: tuple[str, ...], kind: str, word: str) -> Refused:
    """The real tool's own error for an unknown command or flag."""
    if prog == "gcloud":
        where = ".".join(("gcloud", *path))
        if kind == "command":
            return Refused(f"ERROR: ({where}) Invalid choice: '{word}'.", 2)
        return Refused(f"ERROR: ({where}) unrecognized arguments: {word}", 2)
    if prog == "aws":
        if kind == "command":
            return Refused(f"aws: error: argument operation: Invalid choice: '{word}'", 252)
        return Refused(f"aws: error: unknown options: {word}", 252)
    # eksctl and kubectl are cobra programs.
    if kind == "command":
        return Refused(f'Error: unknown command "{word}" for "{" ".join((prog, *path))}"', 1)
    prefix = "Error" if prog == "eksctl" else "error"
    shorthand = not word.startswith("--")
    what = (
        f"unknown shorthand flag: '{word[1:2]}' in {word}" if shorthand else f"unknown flag: {word}"
    )
    return Refused(f"{prefix}: {what}", 1)


def check(prog: str, argv: list[str]) -> None:
    """Refused unless `prog argv` is a command and flags the tool documents."""
    commands = COMMANDS[prog]
    global_flags = GLOBAL_FLAGS[prog]
    words: list[str] = []
    rest: list[str] = []
    skip = False
    # Global flags may come before the command (kubectl -n NS rollout ...).
    for index, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            takes = global_flags.get(name)
            if takes is None and not words:
                raise _refuse(prog, (), "flag", name)
            if takes and "=" not in arg:
                skip = True
            if takes is not None:
                continue
            rest = argv[index:]
            break
        candidate = (*words, arg)
        if any(path[: len(candidate)] == candidate for path in commands):
            words.append(arg)
            if candidate in commands:
                rest = argv[index + 1 :]
                break
            continue
        raise _refuse(prog, tuple(words), "command", arg)
    path = tuple(words)
    if path not in commands:
        raise _refuse(prog, path, "command", "(none)")
    spec = commands[path]
    flags = {**global_flags, **spec.flags}
    positionals = 0
    skip = False
    for arg in rest:
        if skip:
            skip = False
            continue
        if arg.startswith("-") and arg != "-":
            name = arg.split("=", 1)[0]
            if name not in flags:
                raise _refuse(prog, path, "flag", name)
            skip = flags[name] and "=" not in arg
            continue
        positionals += 1
        if positionals > spec.positionals:
            raise _refuse(prog, path, "flag", arg)
