# ruff: noqa: E501 - task prompts are one line each, as PinchBench writes them
"""Sources in the shapes their publishers use, written into temp folders by the tests.

PinchBench: a skill checkout (``tasks/task_*.md`` + ``assets/``) whose task files follow
``pinchbench/skill`` — YAML front matter (``id``, ``name``, ``category``, ``grading_type``,
``timeout_seconds``, ``workspace_files`` as ``{source, dest}`` / ``{path, content}``, ``grading_weights``)
and the ``## Prompt`` / ``## Expected Behavior`` / ``## Grading Criteria`` / ``## Automated Checks`` (a
fenced ``grade(transcript: list, workspace_path: str) -> dict`` returning criterion → 0..1) / ``## LLM Judge
Rubric`` sections. ClawForge: a ``ClawForge-Tool_env``-style file (module-level default state, a class
with ``_api_description``, ``_load_scenario(scenario, long_context=False)`` that falls back to a deep copy
of the default, ``get_env_state()`` returning ``{"key": self.attr}``, integer-keyed dicts, methods that
return ``{"error": ...}`` and stamp ``datetime.now()``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

MEMORY_TASK = '''---
id: task_memory
name: Memory Retrieval from Context
category: context
grading_type: automated
timeout_seconds: 120
workspace_files:
  - path: "notes.md"
    content: |
      # Project Phoenix - Development Notes

      - **Alpha Release**: March 15, 2024
      - **Beta Release**: June 1, 2024
      - **Production Launch**: September 30, 2024
---

## Prompt

Read the project notes in notes.md and answer: What is the deadline for the beta release? Save your answer to answer.txt.

## Expected Behavior

The agent should read `notes.md`, find the beta release date (June 1, 2024) and write it to `answer.txt`.

## Grading Criteria

- [ ] File `answer.txt` created
- [ ] Answer contains the date "June 1, 2024" or equivalent
- [ ] Agent read the notes.md file (visible in transcript)

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    """
    Grade the memory retrieval task.

    Args:
        transcript: Parsed JSONL transcript as list of dicts
        workspace_path: Path to the task's isolated workspace directory

    Returns:
        Dict mapping criterion names to scores (0.0 to 1.0)
    """
    from pathlib import Path
    import re

    scores = {}
    answer_file = Path(workspace_path) / "answer.txt"
    if not answer_file.exists():
        return {"file_created": 0.0, "correct_date": 0.0, "read_notes": 0.0}
    scores["file_created"] = 1.0
    content = answer_file.read_text().lower()
    patterns = [r'june\\s+1,?\\s+2024', r'2024-06-01', r'6/1/2024']
    scores["correct_date"] = 1.0 if any(re.search(p, content) for p in patterns) else 0.0
    read_notes = False
    for event in transcript:
        if event.get("type") != "message":
            continue
        msg = event.get("message", {})
        if msg.get("role") == "assistant":
            for item in msg.get("content", []):
                if item.get("type") == "toolCall" and item.get("name") in ["read", "read_file"]:
                    read_notes = True
    scores["read_notes"] = 1.0 if read_notes else 0.0
    return scores
```
'''

CSV_TASK = '''---
id: task_csv_total
name: Sales CSV Total
category: finance
grading_type: hybrid
timeout_seconds: 180
grading_weights:
  automated: 0.6
  llm_judge: 0.4
workspace_files:
  - source: csvs/sales.csv
    dest: sales.csv
---

## Prompt

I have a CSV file `sales.csv` in my workspace with columns `region` and `amount`. Please compute the total amount and write it, as a plain number, to `total.txt`.

---

## Expected Behavior

The agent reads the CSV, sums the `amount` column (total 60) and writes `60` to `total.txt`.

---

## Grading Criteria

- [ ] File `total.txt` is created
- [ ] The total is 60

---

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    """Grade the CSV total task."""
    from pathlib import Path

    out = Path(workspace_path) / "total.txt"
    if not out.exists():
        return {"file_created": 0.0, "correct_total": 0.0}
    text = out.read_text().strip()
    return {"file_created": 1.0, "correct_total": 1.0 if text in ("60", "60.0", "60.00") else 0.0}
```

---

## LLM Judge Rubric

### Criterion 1: Accuracy (Weight: 100%)

**Score 1.0**: The total is correct and clearly written.
**Score 0.0**: No total.
'''

BROKEN_GRADER_TASK = """---
id: task_broken_grader
name: Broken Grader
category: basic
grading_type: automated
timeout_seconds: 60
workspace_files: []
---

## Prompt

Write "hello" to hello.txt.

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    scores = {}
    if True
        scores["x"] = 1.0
    return scores
```
"""

JUDGE_ONLY_TASK = """---
id: task_judge_only
name: Judge Only
category: writing
grading_type: llm_judge
timeout_seconds: 60
workspace_files: []
---

## Prompt

Write a haiku about spring to haiku.txt.

## LLM Judge Rubric

### Criterion 1: Form (Weight: 100%)

**Score 1.0**: A 5-7-5 haiku.
"""

MISSING_ASSET_TASK = """---
id: task_missing_asset
name: Missing Asset
category: basic
grading_type: automated
timeout_seconds: 60
workspace_files:
  - source: csvs/not_there.csv
    dest: data.csv
---

## Prompt

Count the rows of data.csv and write the count to count.txt.

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    return {"done": 0.0}
```
"""


def pinchbench_skill(root: Path, *, broken: bool = True) -> Path:
    """A PinchBench skill checkout: two good tasks (+ three bad ones unless ``broken`` is False)."""
    (root / "tasks").mkdir(parents=True)
    (root / "assets" / "csvs").mkdir(parents=True)
    (root / "assets" / "csvs" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\neast,30\n")
    (root / "tasks" / "task_memory.md").write_text(MEMORY_TASK)
    (root / "tasks" / "task_csv_total.md").write_text(CSV_TASK)
    (root / "tasks" / "manifest.yaml").write_text("tasks:\n  - task_memory\n  - task_csv_total\n")
    if broken:
        (root / "tasks" / "task_broken_grader.md").write_text(BROKEN_GRADER_TASK)
        (root / "tasks" / "task_judge_only.md").write_text(JUDGE_ONLY_TASK)
        (root / "tasks" / "task_missing_asset.md").write_text(MISSING_ASSET_TASK)
    return root


TODO_API = '''
from copy import deepcopy
from datetime import datetime
from typing import Dict, List, Optional, Union

DEFAULT_TODO_STATE = {
    "current_user": None,
    "projects": {10: {"id": 10, "name": "Website Redesign", "owner": "admin"}},
    "tasks": {
        1001: {"id": 1001, "project_id": 10, "title": "Design Mockups", "status": "In Progress",
               "priority": 4, "assignee": "alice", "updated_at": None},
    },
    "task_counter": 1002,
}


class TodoListAPI:
    """
    A small project and task management API.

    Attributes:
        current_user (Optional[str]): Currently authenticated user.
        projects (Dict[int, Dict]): Projects keyed by id.
        tasks (Dict[int, Dict]): Tasks keyed by id.
        task_counter (int): Next task id.
    """

    VALID_STATUSES = ["Todo", "In Progress", "Done"]

    def __init__(self):
        self.current_user: Optional[str]
        self.projects: Dict[int, Dict[str, Union[int, str]]]
        self.tasks: Dict[int, Dict]
        self.task_counter: int
        self._api_description = "A project and task management system handling assignments and statuses."

    def _load_scenario(self, scenario: dict, long_context=False) -> None:
        """
        Load a scenario into the API.

        Args:
            scenario (dict): State dictionary to load.
            long_context (bool): Whether to load long context features.
        """
        DEFAULT_STATE_COPY = deepcopy(DEFAULT_TODO_STATE)
        self.current_user = scenario.get("current_user", DEFAULT_STATE_COPY["current_user"])
        projects = scenario.get("projects", DEFAULT_STATE_COPY["projects"])
        self.projects = {int(k) if str(k).isdigit() else k: v for k, v in projects.items()}
        tasks = scenario.get("tasks", DEFAULT_STATE_COPY["tasks"])
        self.tasks = {int(k) if str(k).isdigit() else k: v for k, v in tasks.items()}
        self.task_counter = scenario.get("task_counter", DEFAULT_STATE_COPY["task_counter"])

    def get_env_state(self) -> Dict:
        """
        Retrieve the current environment state.

        Returns:
            Dict: current user, projects, tasks and counter.
        """
        return {
            "current_user": self.current_user,
            "projects": self.projects,
            "tasks": self.tasks,
            "task_counter": self.task_counter,
        }

    def auth_login(self, username: str) -> Dict[str, bool]:
        """
        Authenticate as a user.

        Args:
            username (str): The username of the user to log in as.

        Returns:
            Dict[str, bool]: Dictionary indicating successful authentication.
        """
        self.current_user = username
        return {"success": True}

    def create_task(self, project_id: int, title: str, priority: int = 3,
                    assignee: Optional[str] = None) -> Dict[str, Union[int, str]]:
        """
        Create a new task within a project.

        Args:
            project_id (int): The ID of the project to create the task in.
            title (str): The title of the new task.
            priority (int): Priority level between 1 and 5.
            assignee (Optional[str]): Username of the person assigned to the task.

        Returns:
            Dict[str, Union[int, str]]: The new task ID and status, or an error.
        """
        if not self.current_user:
            return {"error": "Authentication required."}
        if project_id not in self.projects:
            return {"error": f"Project ID {project_id} not found."}
        if priority < 1 or priority > 5:
            return {"error": "Priority must be between 1 and 5."}
        task_id = self.task_counter
        self.tasks[task_id] = {"id": task_id, "project_id": project_id, "title": title, "status": "Todo",
                               "priority": priority, "assignee": assignee,
                               "updated_at": datetime.now().strftime("%Y-%m-%d %H:%M:%S")}
        self.task_counter += 1
        return {"id": task_id, "status": "Task created successfully"}

    def update_task_status(self, task_id: int, status: str) -> Dict[str, str]:
        """
        Update the status of a task.

        Args:
            task_id (int): The ID of the task to update.
            status (str): The new status to set.

        Returns:
            Dict[str, str]: The result status or an error message.
        """
        if not self.current_user:
            return {"error": "Authentication required."}
        if task_id not in self.tasks:
            return {"error": "Task not found."}
        if status not in self.VALID_STATUSES:
            return {"error": f"Invalid status. Must be one of {self.VALID_STATUSES}."}
        task = self.tasks[task_id]
        task["status"] = status
        task["updated_at"] = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        return {"status": f"Task {task_id} marked as {status}."}

    def get_task(self, task_id: int) -> Dict:
        """
        Get one task.

        Args:
            task_id (int): The ID of the task.

        Returns:
            Dict: The task, or an error.
        """
        if task_id not in self.tasks:
            return {"error": "Task not found."}
        return dict(self.tasks[task_id])

    def list_tasks(self, project_id: Optional[int] = None) -> Dict[str, List[Dict]]:
        """
        List tasks, optionally of one project, highest priority first.

        Args:
            project_id (Optional[int]): If provided, only tasks of this project.

        Returns:
            Dict: {"tasks": [...]}
        """
        found = [t for t in self.tasks.values() if project_id is None or t["project_id"] == project_id]
        return {"tasks": sorted(found, key=lambda t: -t["priority"])}
'''

TODO_SCENARIOS = {
    "scenarios": {
        "busy_sprint": {
            "title": "A sprint with two projects",
            "task_prompt": "Mark task 2001 as done.",
            "state": {
                "current_user": "alice",
                "projects": {
                    "10": {"id": 10, "name": "Website", "owner": "admin"},
                    "20": {"id": 20, "name": "Mobile", "owner": "bob"},
                },
                "tasks": {
                    "2001": {
                        "id": 2001,
                        "project_id": 20,
                        "title": "Login screen",
                        "status": "Todo",
                        "priority": 5,
                        "assignee": "bob",
                        "updated_at": None,
                    }
                },
                "task_counter": 2002,
            },
            "reference_solution": [
                {"tool": "update_task_status", "params": {"task_id": 2001, "status": "Done"}}
            ],
        }
    }
}

HANGING_API = '''
import time

while True:  # the module never finishes importing
    time.sleep(1)


class HangingAPI:
    def _load_scenario(self, scenario, long_context=False):
        self.x = 1

    def get_env_state(self):
        return {"x": self.x}

    def poke(self) -> dict:
        """Poke."""
        return {}
'''

CRASHING_API = '''
raise RuntimeError("boom at import")


class CrashingAPI:
    def _load_scenario(self, scenario, long_context=False):
        self.x = 1

    def get_env_state(self):
        return {"x": self.x}

    def poke(self) -> dict:
        """Poke."""
        return {}
'''

SYNTAX_API = """
class BrokenAPI:
    def _load_scenario(self, scenario, long_context=False)
        self.x = 1

    def get_env_state(self):
        return {"x": self.x}
"""

BAD_TRUTH_SCENARIOS = {
    "scenarios": {
        "wrong": {
            "state": {"current_user": "alice"},
            "reference_solution": [{"tool": "close_sprint", "params": {}}],
        }
    }
}


def tool_api_folder(root: Path, *, bad: bool = True) -> Path:
    """A ``ClawForge-Tool_env``-style folder: one good environment with a scenario file (+ bad ones)."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    (root / "TodoManagementSystem.py").write_text(textwrap.dedent(TODO_API).lstrip())
    (root / "TodoManagementSystem.json").write_text(json.dumps(TODO_SCENARIOS, indent=2))
    if bad:
        (root / "HangingSystem.py").write_text(HANGING_API.lstrip())
        (root / "CrashingSystem.py").write_text(CRASHING_API.lstrip())
        (root / "BrokenSystem.py").write_text(SYNTAX_API.lstrip())
        bad_truth = root / "BadTruthSystem.py"
        bad_truth.write_text(textwrap.dedent(TODO_API).lstrip())
        (root / "BadTruthSystem.json").write_text(json.dumps(BAD_TRUTH_SCENARIOS))
    return root
