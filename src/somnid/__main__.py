from somnid.cli import main

raise SystemExit(main())
