"""The plugin as Airflow discovers it: entry point, external views Airflow's API accepts, the app at /acid."""

from __future__ import annotations

from importlib.metadata import entry_points

from airflow_acid.plugins import ACID_DAG_IDS, AcidPlugin


def test_registered_through_the_airflow_plugins_entry_point():
    (entry,) = [e for e in entry_points(group="airflow.plugins") if e.name == "airflow_acid"]
    assert entry.load() is AcidPlugin


def test_external_views_are_relative_and_valid_for_airflow():
    from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse

    views = {v["destination"]: ExternalViewResponse.model_validate(v) for v in AcidPlugin.external_views}
    assert set(views) == {"nav", "dag"}
    assert views["nav"].href == "acid/" and views["dag"].href == "acid/dag/{DAG_ID}"
    assert len({v.url_route for v in views.values()}) == 2
    assert {"acid_compaction", "acid_manual_compaction", "acid_cleanup", "acid_housekeeping"} == set(ACID_DAG_IDS)


def test_the_console_is_built_once_when_airflow_asks():
    from airflow.api_fastapi.app import RESERVED_URL_PREFIXES
    from fastapi import FastAPI

    plugin = AcidPlugin()
    (app,) = plugin.fastapi_apps
    assert app["url_prefix"] == "/acid" and not any(app["url_prefix"].startswith(p) for p in RESERVED_URL_PREFIXES)
    assert isinstance(app["app"], FastAPI) and plugin.fastapi_apps[0]["app"] is app["app"]
    paths = {route.path for route in app["app"].routes}
    assert {"/", "/compactions", "/transactions", "/tables/{database}/{table}", "/dag/{dag_id}",
            "/api/compactions", "/api/locks", "/api/why/{database}/{table}"} <= paths


def test_package_data_ships_the_templates_and_static_files():
    """A non-editable install (the Docker image) only gets the files setup.cfg's package_data names."""
    import configparser
    from fnmatch import fnmatch
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "airflow_acid" / "plugins"
    config = configparser.ConfigParser()
    config.read(package.parents[1] / "setup.cfg")
    patterns = [p.strip() for p in config.get("options.package_data", "airflow_acid.plugins", fallback="").split(",")]
    files = [str(f.relative_to(package)) for folder in ("templates", "static") for f in (package / folder).iterdir()]
    assert files and [f for f in files if not any(fnmatch(f, p) for p in patterns if p)] == []
