"""Publishing the book: the built HTML goes to a ``gh-pages`` branch, and the book knows its GitHub repository.

:func:`publish` (``stereoprobe publish``, ``make publish``) commits ``_build/html`` with ghp-import to the
``gh-pages`` branch (a ``.nojekyll`` file included, so GitHub Pages serves ``_static/`` and ``_sources/`` as
they are) and pushes that branch to a git remote. It never builds: ``make book`` does.

:func:`repository` is the one setting behind the book's repository, issue, download and launch buttons and its
base URL: the GitHub repository ``owner/name``, from ``STEREOPROBE_REPOSITORY``, else ``GITHUB_REPOSITORY``
(set by GitHub Actions), else the URL of the ``origin`` remote; :mod:`stereoprobe.book` stages the book with it.
Without one (an offline clone) the book is built as ``_config.yml`` says, with those buttons off.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stereoprobe.errors import StereoprobeError

__all__ = ["PAGES_BRANCH", "PublishError", "Repository", "github_repository", "publish", "repository"]

#: The branch the HTML is published to; the launch buttons open the notebooks it carries under ``_sources/``.
PAGES_BRANCH = "gh-pages"

#: Where the repository ``owner/name`` is read from, first match wins (then the ``origin`` remote).
REPOSITORY_ENV = ("STEREOPROBE_REPOSITORY", "GITHUB_REPOSITORY")

_SLUG = re.compile(r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]*)/(?P<name>[A-Za-z0-9._-]+)")
# https://github.com/o/n(.git), git://…, ssh://git@github.com(:22)/o/n.git and the scp form git@github.com:o/n.git
_GITHUB_URL = re.compile(r"(?:(?:https?|ssh|git)://)?(?:[^@/]+@)?github\.com(?::\d+)?[:/]"
                         r"(?P<slug>[^/]+/[^/]+?)(?:\.git)?/?", re.IGNORECASE)


class PublishError(StereoprobeError):
    """git could not make or push the commit (the input was fine): the CLI exits with status 1."""


@dataclass(frozen=True)
class Repository:
    """A GitHub repository and the addresses the book derives from it.

    >>> r = Repository("Some-Org", "stereoprobe")
    >>> r.url, r.pages_url
    ('https://github.com/Some-Org/stereoprobe', 'https://some-org.github.io/stereoprobe/')
    >>> Repository("me", "me.github.io").pages_url  # a user or organisation site
    'https://me.github.io/'
    """

    owner: str
    name: str

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.slug}"

    @property
    def pages_url(self) -> str:
        """The GitHub Pages address of the published book (its ``html.baseurl``)."""
        host = f"{self.owner.lower()}.github.io"
        return f"https://{host}/" if self.name.lower() == host else f"https://{host}/{self.name}/"

    @property
    def install_command(self) -> str:
        """The notebook line that installs the package from this repository (a launched notebook's first cell)."""
        return f'%pip install "stereoprobe[zoo,book] @ git+{self.url}"'


def github_repository(url: str) -> Repository | None:
    """The GitHub repository a git remote URL names (https, ssh or scp form), or None for any other host.

    >>> github_repository("git@github.com:owner/name.git")
    Repository(owner='owner', name='name')
    >>> github_repository("https://token@github.com/owner/name/")
    Repository(owner='owner', name='name')
    >>> github_repository("https://gitlab.com/owner/name.git") is None
    True
    """
    match = _GITHUB_URL.fullmatch(url.strip())
    slug = _SLUG.fullmatch(match["slug"]) if match else None
    return Repository(slug["owner"], slug["name"]) if slug and slug["name"] not in (".", "..") else None


def repository(root: os.PathLike[str] | str) -> Repository | None:
    """The book's GitHub repository: ``STEREOPROBE_REPOSITORY``, else ``GITHUB_REPOSITORY`` (``owner/name`` or a
    GitHub URL), else the ``origin`` remote of the clone at ``root`` when it is on github.com, else None."""
    for variable in REPOSITORY_ENV:
        value = os.environ.get(variable, "").strip()
        if value:
            slug = _SLUG.fullmatch(value.removesuffix("/"))
            found = Repository(slug["owner"], slug["name"]) if slug else github_repository(value)
            if found is None:
                raise StereoprobeError(f"{variable}={value!r} is not a GitHub repository: set it to OWNER/NAME "
                                       f"(e.g. my-org/stereoprobe) or unset it.")
            return found
    try:
        remote = _git(root, "remote", "get-url", "origin")
    except StereoprobeError:  # no git: an offline book
        return None
    return github_repository(remote.stdout) if remote.returncode == 0 else None


def _git(root: os.PathLike[str] | str, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", os.fspath(root), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise StereoprobeError("git is not installed: install git (e.g. apt-get install git) and rerun.") from None


def _rev(root: Path, ref: str) -> str:
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return found.stdout.strip() if found.returncode == 0 else ""


@contextlib.contextmanager
def _committer(root: Path) -> Iterator[None]:
    """A committer for ghp-import's commit where git has none configured (a fresh CI runner)."""
    fallback = {"GIT_COMMITTER_NAME": ("user.name", "stereoprobe publish"),
                "GIT_COMMITTER_EMAIL": ("user.email", "stereoprobe-publish@users.noreply.github.com")}
    added = {var: value for var, (key, value) in fallback.items()
             if not os.environ.get(var) and not _git(root, "config", key).stdout.strip()}
    os.environ.update(added)
    try:
        yield
    finally:
        for var in added:
            os.environ.pop(var, None)


def publish(
    root: os.PathLike[str] | str,
    build_dir: os.PathLike[str] | str = "_build",
    remote: str = "origin",
    branch: str = PAGES_BRANCH,
    push: bool = True,
    message: str | None = None,
) -> str:
    """Commit ``build_dir/html`` (relative to ``root``, the clone) as the whole content of ``branch`` with
    ghp-import, with a ``.nojekyll`` file, and push ``branch`` to ``remote`` (``push=False``: the local branch only).

    Each publish adds one commit on top of the remote's branch. Checked first, each stopping with one sentence and
    nothing committed: the book is built (``html/index.html``), ``root`` is a git checkout, ``remote`` exists (when
    pushing), ``branch`` is not the branch checked out. A failed commit or push raises :class:`PublishError`.
    Returns the new commit of ``branch``.
    """
    root = Path(root)
    html = Path(build_dir) / "html"
    html = html if html.is_absolute() else root / html
    if not (html / "index.html").is_file():
        shown = html.relative_to(root) if html.is_relative_to(root) else html
        raise StereoprobeError(f"Nothing to publish: {shown / 'index.html'} does not exist; build the book first "
                               "with `make book` (or `stereoprobe book`), then publish.")
    if _git(root, "rev-parse", "--is-inside-work-tree").returncode != 0:
        raise StereoprobeError(f"{root} is not a git checkout, so it has no {branch} branch to publish: publish "
                               "from a clone of the repository (`git clone <url>`).")
    if push and _git(root, "remote", "get-url", remote).returncode != 0:
        raise StereoprobeError(f"No git remote {remote!r} in {root}: add it with `git remote add {remote} <url>`, "
                               "or name another remote with REMOTE=NAME (stereoprobe publish --remote NAME).")
    if _git(root, "symbolic-ref", "--quiet", "--short", "HEAD").stdout.strip() == branch:
        raise StereoprobeError(f"{branch} is the branch checked out in {root}, and publishing replaces its "
                               "content: check out your working branch (`git switch main`) or publish to another "
                               "one with BRANCH=NAME.")
    try:
        import ghp_import
    except ImportError:
        raise StereoprobeError("ghp-import is missing: run `make setup` "
                               "(or `pip install -c constraints.txt -e '.[book]'`).") from None

    if push:  # start from the remote's branch; fails harmlessly on the first publish (no such branch yet)
        _git(root, "fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
    source = _rev(root, "HEAD")
    before = _rev(root, f"refs/heads/{branch}")
    with contextlib.chdir(root), _committer(root):  # ghp-import runs git in the current folder
        try:
            ghp_import.ghp_import(str(html.resolve()), mesg=message or f"Publish the book built from "
                                  f"{source[:12] or 'a clone without commits'}", remote=remote, branch=branch,
                                  push=False, nojekyll=True)
        except Exception as exc:  # noqa: BLE001 - GhpError, or the TypeError of its failure message
            raise PublishError(f"ghp-import could not commit {html} to {branch}: "
                               f"{getattr(exc, 'message', exc)}.") from None
    after = _rev(root, f"refs/heads/{branch}")
    if not after or after == before:
        raise PublishError(f"ghp-import made no commit on {branch} (git fast-import failed; its message is above).")
    if push:
        pushed = _git(root, "push", "--quiet", remote, f"refs/heads/{branch}:refs/heads/{branch}")
        if pushed.returncode != 0:
            reason = (pushed.stderr.strip().splitlines() or ["no message"])[-1]
            raise PublishError(f"git push {remote} {branch} failed ({reason}); the commit is on the local branch "
                               f"{branch}: fix the access to {remote} and run `git push {remote} {branch}`.")
    return after
