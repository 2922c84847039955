"""The team's users' work on Celery workers (``af team build --executor celery``; docs/scale.md).

A Celery worker of a team runs this module's app: ``AF_CELERY_BROKER=redis://host:6379/0 celery
-A assets.team_celery worker``. The team run's users step sends each due user's work as one task
(assets/team.user_work) whose id carries the run's id, so two runs on one broker never share a
result, and waits for the results in the broker's result backend (the same Redis).

Tasks are acknowledged only once done and given back to the queue when the worker process that
ran them dies (``acks_late``, ``task_reject_on_worker_lost``): a killed worker costs a retry on
another, not the user. A user's work holds their warehouse lock, so a task delivered twice
never writes their folder twice at once, and a redone build finds the days already published.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from celery import Celery

from assets.team import CELERY_TASK, user_work

BROKER_ENV = "AF_CELERY_BROKER"


@lru_cache(maxsize=8)
def app_for(broker: str) -> Celery:
    """The workers' Celery app of a broker URL."""
    app = Celery("af_team", broker=broker, backend=broker)
    app.conf.update(
        task_acks_late=True,  # a task is taken off the queue when it is done, not when it starts
        task_reject_on_worker_lost=True,  # ... and given back when its worker process died
        worker_prefetch_multiplier=1,  # a worker holds one user at a time: the others wait for free workers
        task_serializer="json", result_serializer="json", accept_content=["json"],
        result_extended=False,
        broker_connection_retry_on_startup=True,
    )

    @app.task(name=CELERY_TASK)
    def user_task(root: str, user: str, certify: bool, run_id: str) -> dict[str, Any]:
        return user_work(root, user, certify, run_id)

    return app


# `celery -A assets.team_celery worker` loads this attribute: the worker's broker from its environment.
app = app_for(os.environ.get(BROKER_ENV, "redis://127.0.0.1:6379/0"))
