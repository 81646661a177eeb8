from coderag_tui.cli import main

raise SystemExit(main())
