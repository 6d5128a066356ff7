"""What is measured: model families behind one interface (`family.Workload`, found through
`registry`), their data and their training/inference steps (torch). YOLOv9 is `yolo9/`."""
