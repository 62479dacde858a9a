"""Reference solutions of the polyglot families, one per language, written (not translated by a
tool): the contract kit checks that each earns the full reward through the rendered harness.
``__SUB__`` is the edit distance's substitution cost, filled in per task."""

from __future__ import annotations

GOLD: dict[str, dict[str, str]] = {
    "min_coins": {
        "python": """
def min_coins(coins: list[int], amount: int) -> int:
    best = [0] + [-1] * amount
    for total in range(1, amount + 1):
        options = [best[total - c] for c in coins if c <= total and best[total - c] >= 0]
        best[total] = min(options) + 1 if options else -1
    return best[amount]
""",
        "javascript": """
function min_coins(coins, amount) {
  const best = new Array(amount + 1).fill(-1);
  best[0] = 0;
  for (let t = 1; t <= amount; t++)
    for (const c of coins)
      if (c <= t && best[t - c] >= 0 && (best[t] < 0 || best[t - c] + 1 < best[t]))
        best[t] = best[t - c] + 1;
  return best[amount];
}
""",
        "typescript": """
function min_coins(coins: number[], amount: number): number {
  const best: number[] = new Array(amount + 1).fill(-1);
  best[0] = 0;
  for (let t = 1; t <= amount; t++)
    for (const c of coins)
      if (c <= t && best[t - c] >= 0 && (best[t] < 0 || best[t - c] + 1 < best[t]))
        best[t] = best[t - c] + 1;
  return best[amount];
}
""",
        "cpp": """
long min_coins(std::vector<long> coins, long amount) {
    std::vector<long> best(amount + 1, -1);
    best[0] = 0;
    for (long t = 1; t <= amount; ++t)
        for (long c : coins)
            if (c <= t && best[t - c] >= 0 && (best[t] < 0 || best[t - c] + 1 < best[t]))
                best[t] = best[t - c] + 1;
    return best[amount];
}
""",
        "java": """
class Problem {
    public static long min_coins(long[] coins, long amount) {
        long[] best = new long[(int) amount + 1];
        Arrays.fill(best, -1);
        best[0] = 0;
        for (int t = 1; t <= amount; t++)
            for (long c : coins)
                if (c <= t && best[t - (int) c] >= 0 && (best[t] < 0 || best[t - (int) c] + 1 < best[t]))
                    best[t] = best[t - (int) c] + 1;
        return best[(int) amount];
    }
}
""",
        "csharp": """
class Problem {
    public static long min_coins(long[] coins, long amount) {
        var best = new long[amount + 1];
        for (long t = 1; t <= amount; t++) {
            best[t] = -1;
            foreach (var c in coins)
                if (c <= t && best[t - c] >= 0 && (best[t] < 0 || best[t - c] + 1 < best[t]))
                    best[t] = best[t - c] + 1;
        }
        return best[amount];
    }
}
""",
        "rust": """
fn min_coins(coins: Vec<i64>, amount: i64) -> i64 {
    let n = amount as usize;
    let mut best = vec![-1i64; n + 1];
    best[0] = 0;
    for t in 1..=n {
        for &c in &coins {
            let c = c as usize;
            if c <= t && best[t - c] >= 0 && (best[t] < 0 || best[t - c] + 1 < best[t]) {
                best[t] = best[t - c] + 1;
            }
        }
    }
    best[n]
}
""",
        "ruby": """
def min_coins(coins, amount)
  best = [0] + [-1] * amount
  (1..amount).each do |t|
    options = coins.select { |c| c <= t && best[t - c] >= 0 }.map { |c| best[t - c] + 1 }
    best[t] = options.min || -1
  end
  best[amount]
end
""",
        "php": """<?php
function min_coins(array $coins, int $amount): int {
    $best = array_fill(0, $amount + 1, -1);
    $best[0] = 0;
    for ($t = 1; $t <= $amount; $t++)
        foreach ($coins as $c)
            if ($c <= $t && $best[$t - $c] >= 0 && ($best[$t] < 0 || $best[$t - $c] + 1 < $best[$t]))
                $best[$t] = $best[$t - $c] + 1;
    return $best[$amount];
}
""",
    },
    "coin_ways": {
        "python": """
def coin_ways(coins: list[int], amount: int) -> int:
    ways = [1] + [0] * amount
    for c in coins:
        for total in range(c, amount + 1):
            ways[total] += ways[total - c]
    return ways[amount]
""",
        "javascript": """
function coin_ways(coins, amount) {
  const ways = new Array(amount + 1).fill(0);
  ways[0] = 1;
  for (const c of coins) for (let t = c; t <= amount; t++) ways[t] += ways[t - c];
  return ways[amount];
}
""",
        "typescript": """
function coin_ways(coins: number[], amount: number): number {
  const ways: number[] = new Array(amount + 1).fill(0);
  ways[0] = 1;
  for (const c of coins) for (let t = c; t <= amount; t++) ways[t] += ways[t - c];
  return ways[amount];
}
""",
        "cpp": """
long coin_ways(std::vector<long> coins, long amount) {
    std::vector<long> ways(amount + 1, 0);
    ways[0] = 1;
    for (long c : coins)
        for (long t = c; t <= amount; ++t) ways[t] += ways[t - c];
    return ways[amount];
}
""",
        "java": """
class Problem {
    public static long coin_ways(long[] coins, long amount) {
        long[] ways = new long[(int) amount + 1];
        ways[0] = 1;
        for (long c : coins)
            for (int t = (int) c; t <= amount; t++) ways[t] += ways[t - (int) c];
        return ways[(int) amount];
    }
}
""",
        "csharp": """
class Problem {
    public static long coin_ways(long[] coins, long amount) {
        var ways = new long[amount + 1];
        ways[0] = 1;
        foreach (var c in coins)
            for (long t = c; t <= amount; t++) ways[t] += ways[t - c];
        return ways[amount];
    }
}
""",
        "rust": """
fn coin_ways(coins: Vec<i64>, amount: i64) -> i64 {
    let n = amount as usize;
    let mut ways = vec![0i64; n + 1];
    ways[0] = 1;
    for c in coins {
        for t in (c as usize)..=n {
            ways[t] += ways[t - c as usize];
        }
    }
    ways[n]
}
""",
        "ruby": """
def coin_ways(coins, amount)
  ways = [1] + [0] * amount
  coins.each { |c| (c..amount).each { |t| ways[t] += ways[t - c] } }
  ways[amount]
end
""",
        "php": """<?php
function coin_ways(array $coins, int $amount): int {
    $ways = array_fill(0, $amount + 1, 0);
    $ways[0] = 1;
    foreach ($coins as $c)
        for ($t = $c; $t <= $amount; $t++) $ways[$t] += $ways[$t - $c];
    return $ways[$amount];
}
""",
    },
    "edit_distance": {
        "python": """
def edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (0 if ca == cb else __SUB__)))
        prev = cur
    return prev[-1]
""",
        "javascript": """
function edit_distance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur.push(Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : __SUB__)));
    prev = cur;
  }
  return prev[b.length];
}
""",
        "typescript": """
function edit_distance(a: string, b: string): number {
  let prev: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur: number[] = [i];
    for (let j = 1; j <= b.length; j++)
      cur.push(Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : __SUB__)));
    prev = cur;
  }
  return prev[b.length];
}
""",
        "cpp": """
#include <algorithm>
long edit_distance(std::string a, std::string b) {
    std::vector<long> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : __SUB__)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}
""",
        "java": """
class Problem {
    public static long edit_distance(String a, String b) {
        long[] prev = new long[b.length() + 1], cur = new long[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                long sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : __SUB__);
                cur[j] = Math.min(Math.min(prev[j] + 1, cur[j - 1] + 1), sub);
            }
            long[] t = prev; prev = cur; cur = t;
        }
        return prev[b.length()];
    }
}
""",
        "csharp": """
using System;
class Problem {
    public static long edit_distance(string a, string b) {
        var prev = new long[b.Length + 1];
        var cur = new long[b.Length + 1];
        for (int j = 0; j <= b.Length; j++) prev[j] = j;
        for (int i = 1; i <= a.Length; i++) {
            cur[0] = i;
            for (int j = 1; j <= b.Length; j++)
                cur[j] = Math.Min(Math.Min(prev[j] + 1, cur[j - 1] + 1), prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : __SUB__));
            var t = prev; prev = cur; cur = t;
        }
        return prev[b.Length];
    }
}
""",
        "rust": """
fn edit_distance(a: String, b: String) -> i64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<i64> = (0..=b.len() as i64).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i as i64];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + if a[i - 1] == b[j - 1] { 0 } else { __SUB__ };
            cur.push((prev[j] + 1).min(cur[j - 1] + 1).min(sub));
        }
        prev = cur;
    }
    prev[b.len()]
}
""",
        "ruby": """
def edit_distance(a, b)
  prev = (0..b.size).to_a
  a.each_char.with_index(1) do |ca, i|
    cur = [i]
    b.each_char.with_index(1) do |cb, j|
      cur << [prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca == cb ? 0 : __SUB__)].min
    end
    prev = cur
  end
  prev[b.size]
end
""",
        "php": """<?php
function edit_distance(string $a, string $b): int {
    $prev = range(0, strlen($b));
    for ($i = 1; $i <= strlen($a); $i++) {
        $cur = [$i];
        for ($j = 1; $j <= strlen($b); $j++)
            $cur[] = min($prev[$j] + 1, $cur[$j - 1] + 1, $prev[$j - 1] + ($a[$i - 1] === $b[$j - 1] ? 0 : __SUB__));
        $prev = $cur;
    }
    return $prev[strlen($b)];
}
""",
    },
}
