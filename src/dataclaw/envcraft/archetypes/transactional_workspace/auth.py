"""Session lifecycle primitives (login / logout / whoami) and the permission guard used by every write."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_reference, now, permission_denied, tool


def current_user(session: dict[str, Any]) -> str:
    """The logged-in account, or a permission error telling the agent to log in."""
    user = session["auth"]["current_user"]
    if user is None:
        raise EnvError(
            ErrorCategory.PERMISSION_DENIED, "You are not logged in. Call login with your account first."
        )
    return user


def has_permission(session: dict[str, Any], account: str, permission: str) -> bool:
    role = session["accounts"][account]["role"]
    return permission in session["roles"].get(role, [])


def require(session: dict[str, Any], permission: str, entity: str) -> str:
    """The current user if it holds ``permission``; else a permission error naming ``entity``."""
    user = current_user(session)
    if not has_permission(session, user, permission):
        raise permission_denied(user, permission.replace("_", " "), entity)
    return user


@tool("write", fields=["auth"], returns=["account"])
def login(session: dict, account_id: str) -> dict:
    """Log in as the workspace account bound to this session; required before any other operation.

    Args:
        account_id: your account id (the task names it), e.g. "agent_lee".

    Returns:
        The account profile and its permissions.
    """
    accounts = session["accounts"]
    if account_id not in accounts:
        raise invalid_reference("account", account_id)
    if account_id != session["workspace_account"]:
        raise permission_denied(
            account_id, "log in to", "this workspace session (it belongs to another account)"
        )
    if not accounts[account_id]["active"]:
        raise permission_denied(account_id, "log in to", "the workspace (the account is deactivated)")
    session["auth"]["current_user"] = account_id
    session["auth"]["logins"] += 1
    session["auth"]["logged_in_at"] = now(session)
    profile = accounts[account_id]
    return {
        "account": {"account_id": account_id, **profile, "permissions": session["roles"][profile["role"]]}
    }


@tool("write", fields=["auth"], returns=["logged_out"])
def logout(session: dict) -> dict:
    """End the logged-in session; later operations need login again."""
    user = current_user(session)
    session["auth"]["current_user"] = None
    return {"logged_out": user}


@tool("read", returns=["account"])
def whoami(session: dict) -> dict:
    """Show the logged-in account and its permissions."""
    user = current_user(session)
    profile = session["accounts"][user]
    return {"account": {"account_id": user, **profile, "permissions": session["roles"][profile["role"]]}}
