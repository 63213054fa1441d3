from atompin.cli import main

main()
