"""Which packaging settings change what is built, installed or loaded, and the kind of each
(review flag ``packaging_changed``; the reading and the comparison are in ``packagingread`` and
``packagingflags``).

Kinds: ``layout`` (where the shipped packages and modules come from: package folders,
``package-dir``, ``packages``/``py-modules``/find, ``force-include``, ``sources``,
include/exclude lists, ``MANIFEST.in``, data files, ``.pth`` files), ``entry_points``
(``[project.scripts]``, gui-scripts, entry points: a ``pytest11`` group is a plugin pytest
loads in every run), ``build`` (``[build-system]`` backend, ``backend-path`` and requirements,
build hooks and ``cmdclass``, code a ``setup.py`` runs, version sources and dynamic metadata:
``[tool.hatch.version]``, ``[tool.pdm.version]``, ``[tool.setuptools.dynamic]``, setuptools_scm's
commands and written files, ``[tool.flit.module]``, ``[tool.poetry.build]``), ``dependencies`` (dependencies,
extras, ``requires-python``, dependency groups) and ``dependency_source`` (a requirement from
a URL or a path, an index or a source other than the default one). Everything else (the
version, the description, classifiers, URLs, ``[tool.ruff]``...) changes nothing that runs.

``PYPROJECT_RULES`` are read in order: the first rule whose pattern (dotted keys, ``*`` for any
one key) is a table path decides it (``DESCEND``: look at its keys; None: no flag), so the
specific rules come before the wildcards.
"""

from __future__ import annotations

LAYOUT, ENTRY_POINTS, BUILD, DEPENDENCIES, DEPENDENCY_SOURCE = (
    "layout", "entry_points", "build", "dependencies", "dependency_source")
KINDS = (LAYOUT, ENTRY_POINTS, BUILD, DEPENDENCIES, DEPENDENCY_SOURCE)
DESCEND = "descend"  # a rule's kind: not a setting, its keys are

# the rule's own words that open a flag's detail, one phrase per kind (``flaglevels`` reads the
# kind back from them; a detail holds the patch's text only after them)
KIND_WORDS = {
    LAYOUT: "changes what the build ships",
    ENTRY_POINTS: "changes the commands and plugins an install registers",
    BUILD: "changes how the package is built",
    DEPENDENCIES: "changes what an install pulls in",
    DEPENDENCY_SOURCE: "changes where requirements come from",
}
# why a reviewer reads it, after the setting
KIND_WHY = {
    LAYOUT: "the package can then ship code from a place no relation judged (an exempt folder, a copy)",
    ENTRY_POINTS: "an install runs these by name; a pytest11 entry point is a plugin pytest loads in every "
                  "run, beside the review's own plugin",
    BUILD: "code that runs when the package is built or installed, outside every relation",
    DEPENDENCIES: "code no relation judged runs with the package",
    DEPENDENCY_SOURCE: "a URL, a path or another index can serve any code under a known name",
}

REQUIREMENTS = "requirements"  # a rule's value is a list of PEP 508 strings: order and spaces do not count
PATTERNS = "patterns"  # a rule's value is file patterns: a change that names data files only is no flag
DIRECTIVE = "directive"  # a setup.cfg value that counts as an ``attr:`` or ``file:`` directive only
PACKAGE_DATA = "package_data"  # PATTERNS where a bare name is a file, never a folder (setuptools package data)

# what a file pattern must be able to match to count: Python code, a .pth, a compiled module
CODE_SUFFIXES = (".py", ".pyw", ".pth", ".so", ".pyd", ".pyc", ".dll", ".dylib")

# (dotted pattern, kind or DESCEND or None, value shape)
PYPROJECT_RULES: tuple[tuple[str, str | None, str | None], ...] = (
    ("build-system.requires", DEPENDENCIES, REQUIREMENTS),
    ("build-system.build-backend", BUILD, None),
    ("build-system.backend-path", BUILD, None),
    ("project.dependencies", DEPENDENCIES, REQUIREMENTS),
    ("project.optional-dependencies.*", DEPENDENCIES, REQUIREMENTS),
    ("project.requires-python", DEPENDENCIES, None),
    ("project.scripts", ENTRY_POINTS, None),
    ("project.gui-scripts", ENTRY_POINTS, None),
    ("project.entry-points.*", ENTRY_POINTS, None),
    ("dependency-groups.*", DEPENDENCIES, REQUIREMENTS),
    # setuptools
    *((f"tool.setuptools.{key}", LAYOUT, None) for key in (
        "packages", "package-dir", "py-modules", "include-package-data", "data-files", "namespace-packages")),
    ("tool.setuptools.package-data", LAYOUT, PACKAGE_DATA),
    ("tool.setuptools.exclude-package-data", LAYOUT, PACKAGE_DATA),
    ("tool.setuptools.script-files", ENTRY_POINTS, None),
    ("tool.setuptools.ext-modules", BUILD, None),
    ("tool.setuptools.cmdclass", BUILD, None),
    # dynamic metadata: ``attr`` imports a module at build time, ``file`` names a file read as the
    # metadata (its requirement or entry-point files are read as such: ``packagingnamed``)
    ("tool.setuptools.dynamic", BUILD, None),
    # setuptools_scm: settings that run a command or write a file at build time (the rest names nothing)
    *((f"tool.setuptools_scm.{key}", BUILD, None) for key in (
        "git_describe_command", "version_file", "version_file_template", "write_to", "write_to_template",
        "local_scheme", "version_scheme", "parse", "parentdir_prefix_version", "root", "scm")),
    # hatchling: every build setting selects files, but hooks (code) and what only names the output
    ("tool.hatch.build.targets", DESCEND, None),
    ("tool.hatch.build.hooks", BUILD, None),
    ("tool.hatch.build.targets.*.hooks", BUILD, None),
    ("tool.hatch.build.targets.*.dependencies", DEPENDENCIES, REQUIREMENTS),
    ("tool.hatch.build.targets.*.require-runtime-dependencies", BUILD, None),
    ("tool.hatch.build.targets.*.require-runtime-features", BUILD, None),
    *((f"tool.hatch.build.{where}{key}", None, None) for where in ("", "targets.*.") for key in (
        "directory", "reproducible", "strict-naming", "macos-max-compat", "core-metadata-version", "versions")),
    *((f"tool.hatch.build.{where}{key}", LAYOUT, PATTERNS) for where in ("", "targets.*.") for key in (
        "include", "exclude", "artifacts")),
    ("tool.hatch.build.*", LAYOUT, None),
    ("tool.hatch.build.targets.*.*", LAYOUT, None),
    ("tool.hatch.metadata.hooks", BUILD, None),
    ("tool.hatch.version", BUILD, None),  # source "code" runs a file at build time; any source reads one
    ("tool.hatch.metadata.allow-direct-references", DEPENDENCY_SOURCE, None),
    # flit
    ("tool.flit.module", BUILD, None),  # which module ships, and flit imports it when ast cannot read it
    ("tool.flit.sdist", LAYOUT, PATTERNS),
    ("tool.flit.external-data", LAYOUT, None),
    ("tool.flit.metadata.module", LAYOUT, None),
    ("tool.flit.scripts", ENTRY_POINTS, None),
    ("tool.flit.entrypoints", ENTRY_POINTS, None),
    ("tool.flit.metadata.requires", DEPENDENCIES, REQUIREMENTS),
    ("tool.flit.metadata.requires-extra", DEPENDENCIES, None),
    ("tool.flit.metadata.requires-python", DEPENDENCIES, None),
    # poetry
    ("tool.poetry.packages", LAYOUT, None),
    ("tool.poetry.include", LAYOUT, PATTERNS),
    ("tool.poetry.exclude", LAYOUT, PATTERNS),
    ("tool.poetry.scripts", ENTRY_POINTS, None),
    ("tool.poetry.plugins.*", ENTRY_POINTS, None),
    ("tool.poetry.dependencies", DEPENDENCIES, None),
    ("tool.poetry.dev-dependencies", DEPENDENCIES, None),
    ("tool.poetry.group.*.dependencies", DEPENDENCIES, None),
    ("tool.poetry.extras", DEPENDENCIES, None),
    ("tool.poetry.source", DEPENDENCY_SOURCE, None),
    ("tool.poetry.build", BUILD, None),
    # pdm-backend
    ("tool.pdm.version", BUILD, None),  # source "call" runs a getter at build time
    ("tool.pdm.build.custom-hook", BUILD, None),
    ("tool.pdm.build.run-setuptools", BUILD, None),
    *((f"tool.pdm.build.{key}", LAYOUT, PATTERNS) for key in ("includes", "excludes", "source-includes")),
    ("tool.pdm.build.*", LAYOUT, None),
    ("tool.pdm.dev-dependencies", DEPENDENCIES, None),
    ("tool.pdm.source", DEPENDENCY_SOURCE, None),
    # maturin, scikit-build-core: the Python side of a compiled package
    *((f"tool.maturin.{key}", LAYOUT, None) for key in (
        "python-source", "python-packages", "module-name", "include", "exclude", "data")),
    *((f"tool.scikit-build.{key}", LAYOUT, None) for key in (
        "wheel.packages", "wheel.install-dir", "wheel.exclude", "sdist.include", "sdist.exclude")),
    # uv: where requirements come from
    ("tool.uv.sources", DEPENDENCY_SOURCE, None),
    ("tool.uv.index", DEPENDENCY_SOURCE, None),
    ("tool.uv.index-url", DEPENDENCY_SOURCE, None),
    ("tool.uv.extra-index-url", DEPENDENCY_SOURCE, None),
    ("tool.uv.find-links", DEPENDENCY_SOURCE, None),
    ("tool.uv.dev-dependencies", DEPENDENCIES, REQUIREMENTS),
)

# setup.cfg: (section, option or "*" for each option of the section) -> (kind, value shape)
SETUP_CFG_RULES: dict[tuple[str, str], tuple[str, str | None]] = {
    **{("options", key): (LAYOUT, None) for key in (
        "packages", "package_dir", "py_modules", "include_package_data", "namespace_packages", "data_files",
        "zip_safe_packages")},
    ("options", "scripts"): (ENTRY_POINTS, None),
    ("options", "cmdclass"): (BUILD, None),
    ("options", "entry_points"): (ENTRY_POINTS, None),
    ("metadata", "version"): (BUILD, DIRECTIVE),
    ("metadata", "long_description"): (BUILD, DIRECTIVE),
    ("options", "setup_requires"): (DEPENDENCIES, REQUIREMENTS),
    ("options", "install_requires"): (DEPENDENCIES, REQUIREMENTS),
    ("options", "python_requires"): (DEPENDENCIES, None),
    ("options", "tests_require"): (DEPENDENCIES, REQUIREMENTS),
    ("options", "dependency_links"): (DEPENDENCY_SOURCE, None),
    ("options.packages.find", "*"): (LAYOUT, None),
    ("options.package_data", "*"): (LAYOUT, PACKAGE_DATA),
    ("options.exclude_package_data", "*"): (LAYOUT, PACKAGE_DATA),
    ("options.data_files", "*"): (LAYOUT, None),
    ("options.entry_points", "*"): (ENTRY_POINTS, None),
    ("options.extras_require", "*"): (DEPENDENCIES, REQUIREMENTS),
}

# setup.py: the keywords of a setup() call that change what is built, shipped or installed
SETUP_PY_PATTERNS = frozenset({"package_data", "exclude_package_data"})
SETUP_PY_KEYWORDS: dict[str, str] = {
    **{key: LAYOUT for key in ("packages", "package_dir", "py_modules", "package_data", "exclude_package_data",
                               "include_package_data", "data_files", "namespace_packages")},
    **{key: ENTRY_POINTS for key in ("entry_points", "scripts")},
    **{key: BUILD for key in ("cmdclass", "ext_modules", "ext_package", "distclass", "libraries", "headers")},
    **{key: DEPENDENCIES for key in ("install_requires", "extras_require", "python_requires", "tests_require",
                                     "setup_requires")},
    "dependency_links": DEPENDENCY_SOURCE,
}
