"""Stored conversations: each turn is the question and the answer, with the answer's sources,
the outcome (complete, stopped, or the error line) and its opening section, as JSON text the
answerer decodes."""

from __future__ import annotations

from typing import Any

from coderag_tui.store.backend import StoreBackend


def message_rows(db: StoreBackend, conversation_id: int) -> list[tuple[Any, ...]]:
    """(role, content, sources JSON, created, outcome, invalid JSON, opening JSON) of a
    conversation's messages, oldest first."""
    return db.rows("SELECT role, content, sources, created, outcome, invalid, opening FROM messages "
                   "WHERE conversation_id=? ORDER BY id", (conversation_id,))


def conversation_rows(db: StoreBackend, limit: int = 100) -> list[tuple[Any, ...]]:
    """(id, title, created, updated, message count) of the conversations, latest first."""
    return db.rows("SELECT c.id, c.title, c.created, c.updated, "
                   "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) "
                   "FROM conversations c ORDER BY c.updated DESC, c.id DESC LIMIT ?", (limit,))


def exists(db: StoreBackend, conversation_id: int) -> bool:
    return bool(db.scalar("SELECT 1 FROM conversations WHERE id=?", (conversation_id,)))


def delete(db: StoreBackend, conversation_id: int) -> None:
    with db.transaction():
        db.execute("DELETE FROM messages WHERE conversation_id=?", (conversation_id,))
        db.execute("DELETE FROM conversations WHERE id=?", (conversation_id,))


def save_turn(db: StoreBackend, conversation_id: int | None, title: str, question: str, answer: str,
              sources_json: str, outcome: str, invalid_json: str, now: float, opening_json: str = "") -> int:
    """Store a question and its answer in one transaction, in a new conversation (titled
    `title`) when `conversation_id` is None. Returns the conversation's id."""
    with db.transaction():
        if conversation_id is None:
            conversation_id = int(db.scalar("INSERT INTO conversations(title, created, updated) VALUES(?, ?, ?) "
                                            "RETURNING id", (title, now, now)))
        else:
            db.execute("UPDATE conversations SET updated=? WHERE id=?", (now, conversation_id))
        db.execute("INSERT INTO messages(conversation_id, role, content, sources, created) "
                   "VALUES(?, 'user', ?, '[]', ?)", (conversation_id, question, now))
        db.execute("INSERT INTO messages(conversation_id, role, content, sources, created, outcome, invalid, "
                   "opening) VALUES(?, 'assistant', ?, ?, ?, ?, ?, ?)",
                   (conversation_id, answer, sources_json, now, outcome, invalid_json, opening_json))
    return conversation_id
