"""A model behind a server or an API, named by one string: ``openai-api/<service>/<model>``.

The convention is Inspect's (UK AISI's evaluation framework), for any server that speaks the OpenAI protocol
(vLLM, SGLang, llama.cpp's server, Ollama, TGI, LM Studio, a hosted API): ``<service>`` is a name the user picks for
the server, ``<model>`` is the model's name on it (slashes allowed), and two environment variables say where it is
and how to get in:

* ``<SERVICE>_BASE_URL`` — the server's base URL, up to ``/v1`` (``VLLM_BASE_URL=http://127.0.0.1:8000/v1``);
  for the service ``openai`` it defaults to ``https://api.openai.com/v1``;
* ``<SERVICE>_API_KEY`` — the key, when the server wants one (local servers usually do not).

``<SERVICE>`` is the service name in upper case, ``-`` and ``.`` written ``_``. Why this convention rather than
LiteLLM's ``openai/<model>`` with a base URL beside it, or a URL in the name: the model string then names one
endpoint without carrying its address or key (it goes into tables, file names and the score store), several
endpoints can be used side by side (one variable pair each), and ``openai/<model>`` is also how hub ids of OpenAI's
open-weight models read (``openai/gpt-oss-20b``), which stereoprobe must keep loading from the hub.

The key is read from its variable when a request is sent and nowhere else: it never enters a model string, a
fingerprint, the score store, a log line or an error message (:func:`redact` guards the messages).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import warnings
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..errors import StereoprobeError, StereoprobeWarning

#: How a served model's name starts (Inspect's provider name for OpenAI-compatible servers).
PREFIX = "openai-api/"
#: Where the service ``openai`` is when ``OPENAI_BASE_URL`` is not set.
OPENAI_URL = "https://api.openai.com/v1"


class EndpointError(StereoprobeError):
    """A served model that cannot be used as named or as it answers (one sentence: the culprit and the fix)."""


def served_name(model) -> str:
    """The name a server knows a model by: the last part of its name, whether a path, a hub id, a ``zoo:``/``lab:``
    name or a served one (``zoo:smollm2-135m-instruct`` and ``openai-api/local/smollm2-135m-instruct`` are both
    ``smollm2-135m-instruct``).

    >>> served_name("zoo:smollm2-135m-instruct"), served_name("openai-api/local/smollm2-135m-instruct/")
    ('smollm2-135m-instruct', 'smollm2-135m-instruct')
    """
    return re.split(r"[:/]", str(model).rstrip("/"))[-1]


def claims(name: str) -> bool:
    """Whether ``name`` names a served model."""
    return isinstance(name, str) and name.startswith(PREFIX)


def variable(service: str, what: str) -> str:
    """The environment variable of ``service``'s ``what`` (``BASE_URL``, ``API_KEY``).

    >>> variable("vllm", "BASE_URL"), variable("my-server.2", "API_KEY")
    ('VLLM_BASE_URL', 'MY_SERVER_2_API_KEY')
    """
    return re.sub(r"[^A-Z0-9]", "_", service.upper()) + "_" + what


@dataclass(frozen=True)
class Endpoint:
    """One served model: ``service`` and ``model`` from its name, ``base_url`` from ``<SERVICE>_BASE_URL``; the key's
    variable name, never the key (:meth:`key` reads it when a request is sent)."""

    name: str
    service: str
    model: str
    base_url: str

    @property
    def key_variable(self) -> str:
        return variable(self.service, "API_KEY")

    @property
    def url_variable(self) -> str:
        return variable(self.service, "BASE_URL")

    def key(self) -> str | None:
        """The API key from its variable (None when unset or empty)."""
        return os.environ.get(self.key_variable) or None

    @property
    def fingerprint(self) -> str:
        """What keys the score store: the service, the model's name and the server's address (no key, no user or
        password of the URL). A hosted model can change under one name: each stored answer also keeps the model id
        and system fingerprint the server reported."""
        text = f"served\n{self.service}\n{self.model}\n{self.base_url}"
        return hashlib.sha256(text.encode()).hexdigest()

    def url(self, path: str) -> str:
        """The address of ``path``: under the base URL (``completions``), or, led by ``/``, under the server's root:
        the base URL without its ``/v1`` (vLLM's ``/tokenize`` and ``/detokenize``)."""
        if path.startswith("/"):
            return self.base_url.removesuffix("/v1") + path
        return self.base_url + "/" + path


def _clean_url(url: str, var: str) -> str:
    """The base URL without a trailing slash and without any user:password part; an unusable one refused."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"{var}={url!r} is not an http(s) URL; set it to the server's base URL, e.g. "
                            "http://127.0.0.1:8000/v1.")
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def is_local(host: str) -> bool:
    """Whether ``host`` is this machine (a loopback name or address)."""
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse(name: str, *, warn: bool = True) -> Endpoint:
    """The endpoint ``name`` names (module doc), its base URL read from the environment now. An ``http://`` URL to
    another machine gets a warning: prompts and key travel in clear text."""
    if not claims(name):
        raise EndpointError(f"{name!r} is not a served model; name one as {PREFIX}<service>/<model>.")
    service, _, model = name[len(PREFIX):].partition("/")
    if not service or not model or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", service):
        raise EndpointError(f"{name!r} does not name a served model; write {PREFIX}<service>/<model>, e.g. "
                            f"{PREFIX}vllm/meta-llama/Llama-3.1-8B-Instruct with VLLM_BASE_URL set.")
    var = variable(service, "BASE_URL")
    url = os.environ.get(var) or (OPENAI_URL if service.lower() == "openai" else None)
    if not url:
        raise EndpointError(f"{name!r} needs the server's address: set {var} to its base URL, e.g. "
                            f"{var}=http://127.0.0.1:8000/v1.")
    base = _clean_url(url, var)
    parts = urlsplit(base)
    if warn and parts.scheme == "http" and not is_local(parts.hostname or ""):
        warnings.warn(f"{var} is an http:// URL to another machine ({parts.hostname}): prompts and the API key travel "
                      "in clear text; use https:// where the server offers it.", StereoprobeWarning, stacklevel=2)
    return Endpoint(name, service, model, base)


def redact(text: str, endpoint: Endpoint | None = None) -> str:
    """``text`` with any API key of the environment (``*_API_KEY`` variables) replaced by ``***``: what an error
    message or a log line may carry of a server's answer."""
    keys = [v for k, v in os.environ.items() if k.endswith("_API_KEY") and len(v) >= 4]
    if endpoint is not None and endpoint.key():
        keys.append(endpoint.key())
    for key in sorted(set(keys), key=len, reverse=True):
        text = text.replace(key, "***")
    return text
