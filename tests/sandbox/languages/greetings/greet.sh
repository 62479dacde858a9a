#!/usr/bin/env bash
IFS= read -r name
printf 'Hello, %s!\n' "${name:-world}"
