"""What run.json says ran a kubernetes cell besides the image: the scheduler and the tools."""

from __future__ import annotations

from typing import Any

from fake_apiserver import Scenario

TOOLS_LOG = (
    'KARY {"meta": "cell", "cell": "{cell}", "flux_version": "0.88.0"}\n'
    'KARY {"meta": "tools", "scheduler": "sched-fluxion-qmanager,sched-fluxion-resource", '
    '"hasher": "OpenSSL 3.0.13 30 Jan 2024", "client": "curl: curl 8.5.0"}\n'
    'KARY {"meta": "done", "failed_steps": 0}\n'
)


def test_the_loaded_scheduler_and_the_timed_tools_reach_run_json(
    apiserver: Any, make_backend: Any, cell: Any, rendered: Any
) -> None:
    apiserver.cluster.scenario = Scenario(log=TOOLS_LOG)
    with make_backend() as backend:
        result = backend.run(cell, rendered, 10)
    assert result.rc == 0, result.error
    assert result.provenance["scheduler"] == "sched-fluxion-qmanager,sched-fluxion-resource"
    assert result.provenance["tools"] == {
        "hasher": "OpenSSL 3.0.13 30 Jan 2024",
        "client": "curl: curl 8.5.0",
    }
