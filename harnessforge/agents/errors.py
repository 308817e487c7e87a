"""`AgentError`: a model API that cannot be used (no key, down after retries, too slow), said in one line."""

from __future__ import annotations

from ..errors import HarnessForgeError

RETRYABLE = {408, 409, 429}  # and every 5xx: what the SDKs retry on their own


class AgentError(HarnessForgeError):
    """A backend call that failed for good; `status_code` is the HTTP status when there was one."""

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


def api_error(api: str, url: str, exc: Exception, max_retries: int, timeout: float) -> AgentError:
    """Translate an `anthropic`/`openai` SDK exception (same Stainless shapes) into an `AgentError`.

    Called only after the SDK's own retries, so the message says how many there were.
    """
    status = getattr(exc, "status_code", None)
    tries = f"after {max_retries} retries" if max_retries else "without retries (max_retries=0)"
    if status is not None:
        detail = _api_message(exc)
        if status in (401, 403):
            return AgentError(f"{api} at {url} rejected the API key ({status}): {detail}", status)
        when = f" {tries}" if status in RETRYABLE or status >= 500 else ""
        return AgentError(f"{api} at {url} answered HTTP {status}{when}: {detail}", status)
    if "Timeout" in type(exc).__name__:
        return AgentError(f"{api} at {url} did not answer within {timeout:g} s ({tries})")
    cause = exc.__cause__ or exc
    return AgentError(f"{api} at {url} could not be reached ({tries}): {cause}")


def bad_answer(api: str, url: str, answer: object, exc: Exception) -> AgentError:
    """A 200 whose body is not the API's answer (a proxy's HTML page, a server's broken JSON): one line
    with the start of what came, instead of an `AttributeError` from deep in the parsing."""
    why = (str(exc).splitlines() or [type(exc).__name__])[0]
    body = " ".join(str(answer).split())
    return AgentError(f"{api} at {url} answered HTTP 200 but not with a usable response ({why}): {body[:200]}", 200)


def _api_message(exc: Exception) -> str:
    """The server's own error message (`{"error": {"message": ...}}`), else the SDK's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(exc)
