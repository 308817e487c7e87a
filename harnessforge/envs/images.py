"""Images: a base per language (OS + toolchain), then one env image per repo and dependency epoch.

The env layer is made by running the recipe's install in a container on the host network (the
only time anything reaches the network, with the host's CA bundle mounted for TLS) and committing
it. Per-milestone state is never an image: it is a workspace checked out into a container.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import docker
from docker.errors import APIError, ImageNotFound

from ..atomic import file_lock
from ..errors import EnvError
from ..models.env import ImageRecord, Recipe
from ..rules import EnvRules
from ..store import Store
from .engine import LABEL
from .recipes import DEPS_DIR, PLUGINS, TOOLCHAIN_TOO_OLD, env_hash, results_plugin_steps
from .runner_spec import PLUGIN_DIR
from .workspace import SANDBOX_UID, SANDBOX_USER, WORKSPACE, file_tar

HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
BUILD_CA = "/tmp/harnessforge-build-ca.crt"  # copied in for the build, deleted before the commit
# Variables that make tests fail fast offline; they must not apply while installing.
OFFLINE_VARS = {"PIP_NO_INDEX", "GOPROXY", "GOSUMDB", "GOFLAGS", "CARGO_NET_OFFLINE", "npm_config_offline"}
CA_VARS = (
    "PIP_CERT",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "CARGO_HTTP_CAINFO",
    "GIT_SSL_CAINFO",
)
SANDBOX_DIRS = f"/home/{SANDBOX_USER} {WORKSPACE} /hf/out"
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Docker's default PATH


def image_exists(client: docker.DockerClient, tag: str) -> docker.models.images.Image | None:
    try:
        return client.images.get(tag)
    except ImageNotFound:
        return None


def bootstrap_base(client: docker.DockerClient, language: str, rules: EnvRules, force: bool = False, log=print) -> str:
    """Build `base_images[language]` from Debian with debootstrap + docker import (no registry needed)."""
    tag = rules.base_images[language]
    if not force and image_exists(client, tag):
        log(f"{tag}: present")
        return tag
    if shutil.which("debootstrap") is None:
        why = f"cannot bootstrap {tag}: debootstrap is not installed (apt-get install debootstrap)"
        raise EnvError(why, "toolchain_unavailable")
    # One bootstrap per image at a time on this machine (parallel builds, Dagster partitions): the
    # second waits, then finds the image the first imported.
    with file_lock(Path(tempfile.gettempdir()) / f"harnessforge-bootstrap-{language}.lock"):
        if not force and image_exists(client, tag):
            log(f"{tag}: present")
            return tag
        _bootstrap(client, tag, language, rules, log)
    return tag


def bootstrap_packages(language: str, rules: EnvRules) -> list[str]:
    """The Debian packages a bootstrapped base holds (exported task Dockerfiles install the same ones)."""
    return ["git", "ca-certificates", "procps", *rules.bootstrap.packages.get(language, [])]


def bootstrap_path(language: str, rules: EnvRules) -> str:
    """The PATH of a language's base: its toolchain's own directories (a versioned Go) before Debian's."""
    return ":".join([*rules.bootstrap.paths.get(language, []), DEBIAN_PATH])


def _bootstrap(client: docker.DockerClient, tag: str, language: str, rules: EnvRules, log) -> None:
    packages = bootstrap_packages(language, rules)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hf-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        plain = [package for package in packages if "/" not in package]
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(plain)}", rules.bootstrap.suite]
        log(f"{tag}: debootstrap {rules.bootstrap.suite} from {rules.bootstrap.mirror} with {', '.join(packages)}")
        code, output = _debootstrap([*cmd, str(rootfs), rules.bootstrap.mirror], tag, log)
        _unmount_under(rootfs)  # debootstrap can leave /proc mounted in the target
        if code != 0:
            log_path = Path(tempfile.gettempdir()) / f"harnessforge-bootstrap-{language}.log"
            log_path.write_text("\n".join(output) + "\n")
            last = next((line for line in reversed(output) if line.startswith("E:")), output[-1] if output else "")
            raise EnvError(
                f"cannot bootstrap {tag}: debootstrap {rules.bootstrap.suite} from {rules.bootstrap.mirror} "
                f"failed ({code}): {last.strip()} (log: {log_path})",
                "toolchain_unavailable",
            )
        _install_from_suites(rootfs, [package for package in packages if "/" in package], tag, rules, log)
        _setup(rootfs, language, tag, rules, log)
        _add_sandbox_user(rootfs)
        tarball = Path(tmp) / "rootfs.tar"
        tar = ["tar", "-C", str(rootfs), "--numeric-owner", "--one-file-system", "-cf", str(tarball), "."]
        subprocess.run(tar, check=True, capture_output=True)
        log(f"{tag}: importing the root filesystem into Docker")
        repo, _, version = tag.rpartition(":")
        client.api.import_image(
            src=str(tarball),
            repository=repo,
            tag=version,
            changes=[
                "ENV LANG=C.UTF-8",
                f"ENV PATH={bootstrap_path(language, rules)}",
                f"WORKDIR {WORKSPACE}",
                f"LABEL {LABEL}=base",
            ],
        )
    log(f"{tag}: imported in {time.monotonic() - start:.0f}s")


def package_suites(packages: list[str], mirror: str) -> str:
    """The apt source lines for the suites `name/suite` packages come from (one per suite), or ''."""
    suites = sorted({package.split("/", 1)[1] for package in packages if "/" in package})
    return "".join(f"deb {mirror} {suite} main\n" for suite in suites)


def _install_from_suites(rootfs: Path, packages: list[str], tag: str, rules: EnvRules, log) -> None:
    """Install `name/suite` packages (a newer toolchain from backports) with apt-get in the new root:
    debootstrap's own --extra-suites fails a minbase bootstrap (`dpkg --install` with no archive)."""
    if not packages:
        return
    log(f"{tag}: apt-get install {' '.join(packages)}")
    (rootfs / "etc/apt/sources.list.d/harnessforge.list").write_text(package_suites(packages, rules.bootstrap.mirror))
    script = (
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        f"{' '.join(packages)} && apt-get clean && rm -rf /var/lib/apt/lists/*"
    )
    _in_root(rootfs, script, {"PATH": DEBIAN_PATH}, tag, f"apt-get install {' '.join(packages)}")


def _setup(rootfs: Path, language: str, tag: str, rules: EnvRules, log) -> None:
    """Run the language's `bootstrap.setup` commands as root in the new root (a toolchain's warm cache)."""
    for command in rules.bootstrap.setup.get(language, []):
        log(f"{tag}: {command}")
        _in_root(rootfs, command, {"PATH": bootstrap_path(language, rules), "HOME": "/root"}, tag, repr(command))


def _in_root(rootfs: Path, script: str, env: dict[str, str], tag: str, what: str) -> None:
    """`script` by sh as root in the new root; its failure is the bootstrap's, with its last line."""
    done = subprocess.run(
        ["chroot", str(rootfs), "sh", "-c", script],
        env={**env, "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        errors="replace",
    )
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        raise EnvError(f"cannot bootstrap {tag}: {what} failed ({done.returncode}): {last[0]}", "toolchain_unavailable")


def _debootstrap(argv: list[str], tag: str, log) -> tuple[int, list[str]]:
    """Run debootstrap, logging a line each time it moves to a new phase (Retrieving, Extracting,
    Unpacking, Configuring, ...): a bootstrap takes minutes and should show it is alive."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    output, phase = [], None
    for line in proc.stdout:
        output.append(line.rstrip())
        if line.startswith("I: ") and line.split()[1:2] != [phase]:
            phase = (line.split()[1:2] or [None])[0]
            log(f"{tag}: {line[3:].strip()}")
    return proc.wait(), output


def ensure_base(client: docker.DockerClient, recipe: Recipe, rules: EnvRules, log=print) -> None:
    """The recipe's base image, bootstrapped first when it is ours and missing; a missing image that
    is not ours (an override naming another image) cannot be made here."""
    if image_exists(client, recipe.base_image) is not None:
        return
    if rules.base_images.get(recipe.language) != recipe.base_image:
        raise EnvError(
            f"base image {recipe.base_image} not found, and it is not the {recipe.language} base "
            f"`env bootstrap-base` makes ({rules.base_images.get(recipe.language)}): pull or build it first",
            "toolchain_unavailable",
        )
    log(f"{recipe.base_image}: missing, bootstrapping it (debootstrap + docker import, a few minutes)")
    bootstrap_base(client, recipe.language, rules, log=log)


def _unmount_under(root: Path) -> None:
    with open("/proc/mounts") as f:
        points = [line.split()[1] for line in f if line.split()[1].startswith(f"{root}/")]
    for point in sorted(points, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def _add_sandbox_user(rootfs: Path) -> None:
    """The unprivileged user every sandbox command runs as."""
    with open(rootfs / "etc/passwd", "a") as f:
        f.write(f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}::/home/{SANDBOX_USER}:/bin/bash\n")
    with open(rootfs / "etc/group", "a") as f:
        f.write(f"{SANDBOX_USER}:x:{SANDBOX_UID}:\n")
    for directory in SANDBOX_DIRS.split():
        (rootfs / directory.lstrip("/")).mkdir(parents=True, exist_ok=True)
        shutil.chown(rootfs / directory.lstrip("/"), SANDBOX_UID, SANDBOX_UID)


def image_tag(repo_key: str, image_hash: str) -> str:
    return f"harnessforge/{repo_key.lower()}:{image_hash}"


def env_instructions(env: dict[str, str]) -> list[str]:
    """The image's `ENV` lines, each value quoted: `HF_TEST_FILES=test/*.js lib/*.js` is one value, not two names."""
    return [f"ENV {name}={json.dumps(value)}" for name, value in env.items()]


def build_env_image(
    client: docker.DockerClient,
    store: Store,
    repo_key: str,
    recipe: Recipe,
    commit: str,
    deps: dict[str, bytes],
    rules: EnvRules,
    log=print,
) -> ImageRecord:
    """The env image for `recipe` (built unless an image with its hash exists); its record is returned."""
    base = image_exists(client, recipe.base_image)
    if base is None:
        raise EnvError(
            f"base image {recipe.base_image} not found: run `harnessforge env bootstrap-base --language "
            f"{recipe.language}` or set environments.base_images.{recipe.language} to an image you have",
            "toolchain_unavailable",
        )
    image_hash = env_hash(recipe, base.id)
    tag = image_tag(repo_key, image_hash)
    log_path = store.image_log(repo_key, image_hash)
    record = {"repo_key": repo_key, "tag": tag, "env_hash": image_hash, "base_image": recipe.base_image}
    record |= {"commit": commit, "recipe": recipe, "log_path": str(log_path)}
    existing = image_exists(client, tag)
    if existing is not None:
        if not log_path.exists():
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(f"reused image {existing.id}, created {existing.attrs.get('Created')}\n")
        return ImageRecord(**record, image_id=existing.id, build_seconds=0.0)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    # A bind mount would be recorded as a VOLUME in the committed image: copy the CA bundle instead.
    container = client.containers.run(
        base.id,
        ["sleep", "infinity"],
        detach=True,
        network_mode="host",
        labels={LABEL: "build", "harnessforge.repo": repo_key},
    )
    try:
        _copy_inputs(container, deps)
        _install(container, recipe, rules, repo_key, log_path)
        runtime_env = env_instructions(recipe.env)
        repository, _, version = tag.rpartition(":")
        image = container.commit(
            repository=repository, tag=version, changes=[*runtime_env, f"WORKDIR {WORKSPACE}", f"LABEL {LABEL}=env"]
        )
    except APIError as e:
        raise EnvError(f"{repo_key}: docker failed while building {tag}: {e.explanation}", "sandbox_error") from None
    finally:
        container.remove(force=True)
    return ImageRecord(**record, image_id=image.id, build_seconds=round(time.monotonic() - start, 2))


def _copy_inputs(container, deps: dict[str, bytes]) -> None:
    """The dependency files, the host's CA bundle (removed after the install) and our pytest plugin."""
    inputs = {f"{DEPS_DIR}/{path}": data for path, data in deps.items()}
    if HOST_CA.exists():
        inputs[BUILD_CA] = HOST_CA.read_bytes()
    container.put_archive("/", file_tar(inputs, uid=0))
    plugins = {f"{PLUGIN_DIR}/{plugin.name}": plugin.read_bytes() for plugin in PLUGINS.glob("*.py")}
    container.put_archive("/", file_tar(plugins, uid=0))


def _install(container, recipe: Recipe, rules: EnvRules, repo_key: str, log_path: Path) -> None:
    """The recipe's install steps with the network on, each logged; the first that fails raises."""
    env = {name: value for name, value in recipe.env.items() if name not in OFFLINE_VARS}
    env.update({name: BUILD_CA for name in CA_VARS} if HOST_CA.exists() else {})
    steps = [
        f"id -u {SANDBOX_USER} >/dev/null 2>&1 || useradd -u {SANDBOX_UID} -m {SANDBOX_USER}",
        *recipe.install,
        f"mkdir -p {SANDBOX_DIRS} && chown {SANDBOX_UID}:{SANDBOX_UID} {SANDBOX_DIRS}",
        f"chmod -R a+rX {PLUGIN_DIR} {DEPS_DIR} && rm -f {BUILD_CA}",
        *results_plugin_steps(),
    ]
    with open(log_path, "w") as out:
        for step in steps:
            out.write(f"$ {step}\n")
            code, output = container.exec_run(
                ["timeout", str(rules.build_timeout_s), "bash", "-c", step], environment=env, demux=False
            )
            out.write(output.decode(errors="replace"))
            out.flush()
            if code != 0:
                # a recipe's own check that the base's toolchain is too old for the repository says so
                too_old = TOOLCHAIN_TOO_OLD in output.decode(errors="replace")
                reason = "timeout" if code == 124 else "toolchain_unavailable" if too_old else "install_failed"
                tail = output.decode(errors="replace")[-1500:]
                raise EnvError(f"{repo_key}: install step {step!r} failed ({code}); log {log_path}:\n{tail}", reason)
