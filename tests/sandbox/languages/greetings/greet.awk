NR == 1 {
    printf "Hello, %s!\n", $0
    exit
}
