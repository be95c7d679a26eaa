"""scripts/framework_matrix.py: the table made from a report, the check, and the reports it refuses."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "framework_matrix.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("framework_matrix_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def report(script: ModuleType, outcome: str = "passed", *, drop: str | None = None) -> dict[str, Any]:
    """Two frameworks over two protocols: alpha with every check, beta (with a note) without a WebSocket; alpha's
    WebSocket over h2c has `outcome`; `drop` leaves out that framework's h2c results."""
    frameworks = [
        {"name": "alpha", "title": "Alpha", "interface": "ASGI", "distributions": ["alpha"], "note": ""},
        {"name": "beta", "title": "Beta", "interface": "WSGI", "distributions": ["beta", "gamma"], "note": "Odd"},
    ]
    checks = {"alpha": script.CHECKS, "beta": tuple(c for c in script.CHECKS if c != "websocket")}
    results = []
    for framework in ("alpha", "beta"):
        for protocol in ("h1", "h2c"):
            if (framework, protocol) == (drop, "h2c"):
                continue
            for check in checks[framework]:
                chosen = (framework, protocol, check) == ("alpha", "h2c", "websocket")
                result = outcome if chosen else "passed"
                results.append({"framework": framework, "protocol": protocol, "check": check, "outcome": result})
    return {
        "protocols": [{"name": "h1", "title": "HTTP/1.1"}, {"name": "h2c", "title": "HTTP/2 (h2c)"}],
        "frameworks": frameworks,
        "versions": {"alpha": "1.2.3", "beta": "10.20.30", "gamma": "0.5"},
        "results": results,
    }


def document(script: ModuleType, body: str = "") -> str:
    return f"# Doc\n\nbefore\n\n{script.BEGIN}\n{body}{script.END}\n\nafter\n"


def write(tmp_path: Path, script: ModuleType, data: dict[str, Any], doc: str) -> tuple[Path, Path]:
    report_path, doc_path = tmp_path / "report.json", tmp_path / "DOC.md"
    report_path.write_text(json.dumps(data))
    doc_path.write_text(doc)
    return report_path, doc_path


def test_table_rows_name_minor_versions_counts_and_what_does_not_apply(script: ModuleType) -> None:
    lines = script.table(report(script)).splitlines()
    n = len(script.CHECKS)
    assert lines[0] == script.BEGIN
    assert lines[-1] == script.END
    assert lines[1] == "| Framework | Versions | Interface | HTTP/1.1 | HTTP/2 (h2c) | Not applicable |"
    assert lines[3] == f"| Alpha | alpha 1.2 | ASGI | ✓ {n}/{n} | ✓ {n}/{n} | — |"
    assert lines[4] == f"| Beta¹ | beta 10.20, gamma 0.5 | WSGI | ✓ {n - 1}/{n - 1} | ✓ {n - 1}/{n - 1} | websocket |"
    assert "HTTP/3 with aioquic" in lines[6]
    assert "WebSocket over" not in lines[6]  # every protocol here carries WebSocket
    assert lines[8] == "¹ Odd."


def test_a_protocol_without_websocket_names_it_missing_for_frameworks_that_have_it(script: ModuleType) -> None:
    data = report(script)
    data["protocols"].append({"name": "h3", "title": "HTTP/3", "websocket": False})
    for framework in data["frameworks"]:
        framework["websocket"] = framework["name"] == "alpha"
        checks = [r["check"] for r in data["results"] if r["framework"] == framework["name"] and r["protocol"] == "h1"]
        data["results"] += [
            {"framework": framework["name"], "protocol": "h3", "check": c, "outcome": "passed"}
            for c in checks
            if c != "websocket"
        ]
    lines = script.table(data).splitlines()
    n = len(script.CHECKS)
    assert lines[3].endswith(f"| ✓ {n - 1}/{n - 1} (websocket: not yet) | — |"), lines[3]
    assert "WebSocket over HTTP/3" in lines[6]


@pytest.mark.parametrize("outcome", ["failed", "skipped"])
def test_a_check_that_did_not_pass_is_named_in_its_cell(script: ModuleType, outcome: str) -> None:
    row = script.table(report(script, outcome)).splitlines()[3]
    n = len(script.CHECKS)
    assert f"| ✓ {n}/{n} | ✗ {n - 1}/{n} (failed: websocket) |" in row


def test_write_then_check(script: ModuleType, tmp_path: Path) -> None:
    report_path, doc_path = write(tmp_path, script, report(script), document(script, "stale\n"))
    assert script.main(["--check", "--doc", str(doc_path), str(report_path)]) == 1
    assert "stale" in doc_path.read_text()
    assert script.main(["--doc", str(doc_path), str(report_path)]) == 0
    text = doc_path.read_text()
    assert "stale" not in text
    assert text.startswith("# Doc\n\nbefore\n\n")
    assert text.endswith("\n\nafter\n")
    assert script.main(["--check", "--doc", str(doc_path), str(report_path)]) == 0


def test_check_fails_with_a_diff_when_an_outcome_changed(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path, doc_path = write(tmp_path, script, report(script), document(script))
    assert script.main(["--doc", str(doc_path), str(report_path)]) == 0
    report_path.write_text(json.dumps(report(script, "failed")))
    assert script.main(["--check", "--doc", str(doc_path), str(report_path)]) == 1
    error = capsys.readouterr().err
    n = len(script.CHECKS)
    assert f"+| Alpha | alpha 1.2 | ASGI | ✓ {n}/{n} | ✗ {n - 1}/{n} (failed: websocket) | — |" in error
    assert "is not what this run produced" in error


def test_a_report_missing_a_pair_is_refused(script: ModuleType, tmp_path: Path) -> None:
    report_path, doc_path = write(tmp_path, script, report(script, drop="beta"), document(script))
    assert script.main(["--doc", str(doc_path), str(report_path)]) == 1
    assert doc_path.read_text() == document(script)


def test_a_document_without_the_markers_is_refused(script: ModuleType, tmp_path: Path) -> None:
    report_path, doc_path = write(tmp_path, script, report(script), "# no table here\n")
    assert script.main(["--doc", str(doc_path), str(report_path)]) == 1


def test_a_missing_report_is_an_error(script: ModuleType, tmp_path: Path) -> None:
    doc_path = tmp_path / "DOC.md"
    doc_path.write_text(document(script))
    assert script.main(["--check", "--doc", str(doc_path), str(tmp_path / "absent.json")]) == 1
