"""Storage options of object stores (endpoint, region, anonymous, profile), carried through fsspec's own config.

fsspec applies ``fsspec.config.conf[<protocol>]`` to every filesystem it creates and fills that config from
``FSSPEC_<PROTOCOL>`` environment variables (JSON) when it is imported. So one mechanism reaches everywhere: this
process (:meth:`StorageOptions.apply`), and the Spark driver and executors (:meth:`StorageOptions.environment`,
handed to spark-submit's environment and to ``spark.executorEnv.*``). Options here are never secrets: keys,
passwords and tokens are refused; credentials come from the environment (``AWS_ACCESS_KEY_ID`` …, a profile, an
instance role) or an Airflow connection, never from plan files or process arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_acid.acid.errors import StorageOptionsError

ENV_PREFIX = "FSSPEC_"
"""fsspec reads ``FSSPEC_<PROTOCOL>`` (a JSON object of constructor arguments) at import."""

SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
              "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN",
              "AZURE_CLIENT_SECRET")
"""Credential variables a deployment may set; they travel only as process environment, never as arguments."""

_SECRET_KEY = re.compile(r"(?i)(secret|password|passwd|token|credential|(^|_)key$|account_key|sas)")

# The fields every store understands, per protocol family: how each becomes constructor arguments.
_S3 = ("s3", "s3a")
_GCS = ("gs", "gcs")
_AZURE = ("abfs", "abfss", "az", "adl")



def _truthy(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise StorageOptionsError(f"storage option {name}={value!r} is not a boolean (true/false)")


@dataclass(frozen=True)
class StorageOptions:
    """Where and how to reach the warehouse's object store; ``extra`` holds any other (non-secret) fsspec
    constructor argument of the store's filesystem (e.g. ``{"default_block_size": 8388608}``)."""

    endpoint_url: str | None = None
    region: str | None = None
    anonymous: bool = False
    profile: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        secret = [k for k in self.extra if _SECRET_KEY.search(k)]
        if secret:
            raise StorageOptionsError(
                f"storage option(s) {sorted(secret)} look like credentials; credentials come from the environment "
                f"({', '.join(SECRET_ENV[:3])}, a profile, an instance role) or an Airflow connection, never from "
                "storage options (they would reach plan files, logs and process arguments)")

    @property
    def is_empty(self) -> bool:
        return self == StorageOptions()

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> StorageOptions:
        """From a dict such as a connection extra or parsed ``--storage-option k=v`` pairs; ``anon`` and
        ``endpoint`` are accepted as aliases; unknown keys go to ``extra``."""
        values = dict(values or {})
        aliases = {"endpoint": "endpoint_url", "anon": "anonymous", "region_name": "region"}
        fields: dict[str, Any] = {}
        extra: dict[str, Any] = dict(values.pop("extra", None) or {})
        for key, value in values.items():
            name = aliases.get(key, key)
            if name in ("endpoint_url", "region", "profile"):
                fields[name] = str(value) if value not in (None, "") else None
            elif name == "anonymous":
                fields[name] = _truthy(value, key)
            else:
                extra[key] = value
        return cls(**fields, extra=extra)

    @classmethod
    def parse_pairs(cls, pairs: Iterable[str]) -> StorageOptions:
        """``["endpoint_url=http://…", "anonymous=true"]`` (the CLI's ``--storage-option``); values that parse as
        JSON (numbers, booleans, objects) are taken as such."""
        values: dict[str, Any] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise StorageOptionsError(f"storage option {pair!r} is not KEY=VALUE")
            try:
                values[key.strip()] = json.loads(value)
            except ValueError:
                values[key.strip()] = value
        return cls.from_mapping(values)

    @classmethod
    def from_json(cls, text: str | None) -> StorageOptions:
        """From a JSON object (the ``storage_options`` key of the ``[acid]`` section); empty text = no options."""
        if not text or not str(text).strip():
            return cls()
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise StorageOptionsError(f"storage_options is not a JSON object: {exc}") from None
        if not isinstance(doc, dict):
            raise StorageOptionsError(f"storage_options must be a JSON object, not {type(doc).__name__}")
        return cls.from_mapping(doc)

    def merged(self, other: StorageOptions) -> StorageOptions:
        """These options with every value ``other`` sets taking precedence."""
        return StorageOptions(other.endpoint_url or self.endpoint_url, other.region or self.region,
                              other.anonymous or self.anonymous, other.profile or self.profile,
                              {**dict(self.extra), **dict(other.extra)})

    def fsspec_kwargs(self, protocol: str) -> dict[str, Any]:
        """Constructor arguments of ``protocol``'s filesystem (s3fs, gcsfs, adlfs); {} for local filesystems."""
        kwargs: dict[str, Any] = {}
        if protocol in _S3:
            if self.endpoint_url:
                kwargs["endpoint_url"] = self.endpoint_url
            if self.region:
                kwargs["client_kwargs"] = {"region_name": self.region}
            if self.anonymous:
                kwargs["anon"] = True
            if self.profile:
                kwargs["profile"] = self.profile
        elif protocol in _GCS:
            if self.endpoint_url:
                kwargs["endpoint_url"] = self.endpoint_url
            if self.anonymous:
                kwargs["token"] = "anon"
            if self.profile:
                kwargs["project"] = self.profile
        elif protocol in _AZURE:
            if self.anonymous:
                kwargs["anon"] = True
            if self.endpoint_url:
                kwargs["account_host"] = self.endpoint_url.split("://", 1)[-1].rstrip("/")
        else:
            return {}
        kwargs.update(self.extra)
        return kwargs

    def environment(self, protocols: Iterable[str]) -> dict[str, str]:
        """``FSSPEC_<PROTOCOL>`` variables that make fsspec in another process use these options (no secrets)."""
        env = {}
        for protocol in sorted(set(protocols)):
            kwargs = self.fsspec_kwargs(protocol)
            if kwargs:
                env[f"{ENV_PREFIX}{protocol.upper()}"] = json.dumps(kwargs, sort_keys=True)
        return env

    def apply(self, protocols: Iterable[str]) -> None:
        """Make every fsspec filesystem of ``protocols`` created from now on in this process use these options."""
        import fsspec.config  # only when a warehouse opens: reading the configuration stays light

        for protocol in protocols:
            kwargs = self.fsspec_kwargs(protocol)
            if kwargs:
                fsspec.config.conf.setdefault(protocol, {}).update(kwargs)


def protocol_of(location: str) -> str | None:
    """The URL scheme of ``location`` (``s3`` for ``s3://bucket/x``), None for a plain path."""
    scheme, sep, _ = str(location).partition("://")
    return scheme.lower() if sep and scheme else None


def protocols_for(location: str) -> tuple[str, ...]:
    """The fsspec protocol names one store answers to (``s3``/``s3a``), so options apply whichever is used."""
    protocol = protocol_of(location)
    if protocol is None or protocol in ("file", "local"):
        return ()
    for family in (_S3, _GCS, _AZURE):
        if protocol in family:
            return family
    return (protocol,)


def storage_environment(options: StorageOptions | None, locations: Iterable[str]) -> dict[str, str]:
    """The ``FSSPEC_*`` variables a job touching ``locations`` needs (empty when no options apply)."""
    if options is None or options.is_empty:
        return {}
    protocols = {p for loc in locations for p in protocols_for(loc)}
    return options.environment(protocols)


__all__ = ["ENV_PREFIX", "SECRET_ENV", "StorageOptions", "protocol_of", "protocols_for",
           "storage_environment"]
