"""The SQL domains' schema, random rows, and question templates with their gold queries."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CITIES = ["Lyon", "Oslo", "Pune", "Quito", "Turin"]


@dataclass(frozen=True)
class Schema:
    """Tables (DDL) and a random row maker for each."""

    ddl: str
    tables: tuple[str, ...]

    def rows(self, rng: random.Random,
             word: Callable[..., str]) -> dict[str, list[tuple[Any, ...]]]:
        """Random rows: 4-6 departments, 8-20 employees, 3-8 projects (some ids dangle)."""
        n_dept, n_emp = rng.randint(4, 6), rng.randint(8, 20)
        depts = [(i, word(rng, 2, 3).capitalize(), rng.choice(CITIES))
                 for i in range(1, n_dept + 1)]
        emps = [(i, word(rng, 2, 3).capitalize(), rng.randint(1, n_dept + 1),
                 rng.randrange(30, 150) * 1000, rng.randint(2010, 2024))
                for i in range(1, n_emp + 1)]
        projects = [(i, word(rng, 1, 2), rng.randint(1, n_emp), rng.randrange(5, 500) * 100)
                    for i in range(1, rng.randint(3, 8) + 1)]
        return {"departments": depts, "employees": emps, "projects": projects}


SCHEMA = Schema(
    ddl=("CREATE TABLE departments (id INTEGER PRIMARY KEY, name TEXT NOT NULL,\n"
         "                          city TEXT NOT NULL);\n"
         "CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT NOT NULL, dept_id INTEGER,\n"
         "                        salary INTEGER NOT NULL, hired_year INTEGER NOT NULL);\n"
         "CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL,\n"
         "                       lead_id INTEGER REFERENCES employees(id),\n"
         "                       budget INTEGER NOT NULL);\n"),
    tables=("departments", "employees", "projects"),
)


@dataclass(frozen=True)
class Question:
    """A question in words, its gold query, and whether row order is part of the answer."""

    text: str
    gold: str
    ordered: bool = False


# Each template draws its constants from ``rng``; the gold query is what the text asks for.

def filter_salary(rng: random.Random) -> Question:
    floor = rng.randrange(50, 120) * 1000
    return Question(
        f"List the name and salary of every employee earning at least {floor}, highest salary "
        "first and, for equal salaries, by name.",
        f"SELECT name, salary FROM employees WHERE salary >= {floor} ORDER BY salary DESC, name",
        ordered=True)


def filter_hired(rng: random.Random) -> Question:
    year = rng.randint(2013, 2021)
    return Question(
        f"Which employees (id and name) were hired in {year} or later and work in department "
        "1 or 2?",
        f"SELECT id, name FROM employees WHERE hired_year >= {year} AND dept_id IN (1, 2)")


def filter_top(rng: random.Random) -> Question:
    k = rng.randint(2, 4)
    return Question(
        f"Give the names of the {k} projects with the largest budgets, largest first (break ties "
        "by project id, smallest first).",
        f"SELECT name FROM projects ORDER BY budget DESC, id LIMIT {k}", ordered=True)


def aggregate_dept(rng: random.Random) -> Question:
    k = rng.randint(2, 4)
    return Question(
        f"For every dept_id that has at least {k} employees, give the dept_id, the number of its "
        "employees and their average salary, ordered by dept_id.",
        f"SELECT dept_id, COUNT(*), AVG(salary) FROM employees GROUP BY dept_id "
        f"HAVING COUNT(*) >= {k} ORDER BY dept_id", ordered=True)


def aggregate_year(rng: random.Random) -> Question:
    year = rng.randint(2012, 2020)
    return Question(
        f"For each hiring year from {year} on that has any hire, give the year, the number of "
        "employees hired that year and the highest salary among them.",
        f"SELECT hired_year, COUNT(*), MAX(salary) FROM employees WHERE hired_year >= {year} "
        "GROUP BY hired_year")


def aggregate_budget(rng: random.Random) -> Question:
    return Question(
        "Give the total budget of all projects, the number of projects, and the smallest budget.",
        "SELECT SUM(budget), COUNT(*), MIN(budget) FROM projects")


def join_city(rng: random.Random) -> Question:
    return Question(
        "For each city that has a department with at least one employee, give the city and the "
        "total salary of the employees of its departments (employees whose dept_id matches no "
        "department are left out).",
        "SELECT d.city, SUM(e.salary) FROM employees e JOIN departments d ON e.dept_id = d.id "
        "GROUP BY d.city")


def join_leads(rng: random.Random) -> Question:
    return Question(
        "List every project's name with the name of its lead employee and that employee's "
        "department name (skip projects whose lead is not in a known department).",
        "SELECT p.name, e.name, d.name FROM projects p JOIN employees e ON p.lead_id = e.id "
        "JOIN departments d ON e.dept_id = d.id")


def join_unstaffed(rng: random.Random) -> Question:
    year = rng.randint(2013, 2018)
    return Question(
        f"Which departments (id and name) have no employee hired in {year} or later (including "
        "departments with no employees at all)?",
        f"SELECT d.id, d.name FROM departments d WHERE NOT EXISTS (SELECT 1 FROM employees e "
        f"WHERE e.dept_id = d.id AND e.hired_year >= {year})")


QUESTIONS: dict[str, list[Callable[[random.Random], Question]]] = {
    "filter": [filter_salary, filter_hired, filter_top],
    "aggregate": [aggregate_dept, aggregate_year, aggregate_budget],
    "join": [join_city, join_leads, join_unstaffed],
}
