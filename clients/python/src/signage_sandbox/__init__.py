"""signage-sandbox: run the signage sandbox from a Python test suite (pytest plugin and helpers)."""

from .http import Answer, Client, Credential, SignageError
from .operator import Operator
from .scope import TEST_NAME_HEADER
from .receiver import Delivery, WebhookReceiver
from .server import SignageServer, SignageStartError, find_binary, load_credentials

__all__ = [
    "Answer",
    "Client",
    "Credential",
    "Delivery",
    "Operator",
    "SignageError",
    "SignageServer",
    "SignageStartError",
    "TEST_NAME_HEADER",
    "WebhookReceiver",
    "find_binary",
    "load_credentials",
]
