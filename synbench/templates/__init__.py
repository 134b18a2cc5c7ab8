"""File templates of `task=new_plugin` (package data, rendered with `string.Template`).

`common/` holds what every plugin package has (setup.cfg with its two entry
points, pyproject.toml, README, the package and its config package); one
folder per kind adds the plugin class, its config file and its test. In paths,
PACKAGE and NAME stand for the package and plugin names; every file ends in
`.tmpl`, so nothing here is imported, collected by pytest or installed as code.
"""
