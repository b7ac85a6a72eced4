"""The CDK app (aws-cdk-lib v2): the hosted Capsule Memory on Lambda, API Gateway and Atlas."""
